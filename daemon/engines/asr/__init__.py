"""Speech-to-text engines: the narrow `AsrModel` interface (`base`) and Whisper (`whisper`)."""
