"""Context services: the only writers of task_contexts, checkpoints and global_context."""
