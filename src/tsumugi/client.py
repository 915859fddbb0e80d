"""create_client(): enqueue from another Worker through the JOB_SHARD binding alone (J-200)."""
