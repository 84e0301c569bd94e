"""An index for the claims whose overlaps are still to be recorded (claims.services.overlaps._PENDING).

The recorder asked for them with ``cardinality(overlaps_pending) > 0``, which no index
covered: a scan of every claim ever made, ~7 ms at 13,000 claims and growing, several times
a second while agents meet on files. The predicate is the query's own, written in SQL
because Django's Q cannot spell ``cardinality``."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('claims', '0001_file_claims'),
    ]

    operations = [
        migrations.RunSQL(
            "CREATE INDEX file_claim_overlaps_pending ON file_claims (id) "
            "WHERE cardinality(overlaps_pending) > 0",
            "DROP INDEX file_claim_overlaps_pending"),
    ]
