"""Read-only services behind the console pages."""
