"""Speech: what happens to an utterance, from audio in to a spoken answer.

``events`` is the one event vocabulary every protocol translates (a session and a
pipeline run hand their events through the bounded ``daemon.ops.stream``);
``endpoint`` is the pure endpointing state machine; ``session`` is the streaming
speech session (conversion, VAD, endpointing, speculative and partial decodes);
``pipeline`` runs speech → transcript → LLM → sentences → TTS, through the one
``sentence_speaker`` (text in pieces → sentences → voice audio, also for a client's
streamed text); ``player`` is the one player of reply audio (paced to the client's
clock, cut on barge-in) every transport frames for its wire; ``chat`` is the LLM
with a system prompt, limits and per-conversation history; ``transcribe`` decodes
whole files; ``speak`` streams synthesized speech in any output format;
``wake_gate`` lets only the audio after a wake word reach a session;
``turn_text`` joins the speculative transcript's last words to the turn model.

``conversation`` is the one loop of hearing and replying that every client uses
(push-to-talk, hands-free, wake): wake gating, end of turn, the speculative
transcript and reply, barge-in, the household gate and renewal after a reload. Its
decisions are the pure state machine in ``conversation_state`` (idle, waiting for
the wake word, listening, thinking, speaking); ``reply`` holds the reply under way
(its tasks are ``daemon.ops.tasks``); ``finals`` gives each final its speaker
(within the profile's wait, or verified) and a translation. ``request`` is one turn a
client sends and waits on (a Wyoming ``transcribe``, a Willow upload, ``/api/sts``),
within its profile's audio cap and deadline, keeping the audio when asked
(``recording``); ``upload`` answers a whole file the same way.

Speech may import ``daemon.errors``, ``daemon.config``, ``daemon.ops``,
``daemon.audio``, ``daemon.engines`` and ``daemon.speakers``.
"""
