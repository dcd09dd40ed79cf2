"""The people Hearth knows by voice: enrollment, the store of their embeddings, matching.

``store`` (one 0600 file per speaker in ``state_dir/speakers``, written atomically,
matched by cosine similarity) and ``enroll`` (recordings in, one embedding out, in the
speaker worker). Kept apart from ``voices`` (what Hearth speaks with): a person may have
both, and removing one leaves the other.

Speakers may import ``daemon.errors``, ``daemon.config``, ``daemon.ops``,
``daemon.audio`` and ``daemon.engines``; never ``speech``, ``voices``, ``runtime`` or
anything above.
"""
