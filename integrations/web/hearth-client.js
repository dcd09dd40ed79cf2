// Hearth's browser client: one long WebRTC session to a Hearth daemon.
//
// Plain ES module, no build step; used by the /rtc page and the Home Assistant card.
// Between utterances the microphone track is paused (replaceTrack(null)), so an
// idle session sends no audio: only ICE consent checks, RTCP and a data-channel
// ping every 30 s. The session survives pauses; when the connection drops, the
// client reconnects with backoff.
//
// Events (CustomEvent, details in parentheses):
//   state   ({state})  connecting | connected | reconnecting | closed | error
//   partial ({text})   words so far while the person speaks
//   final   ({text, language, audio_ms})
//   vad     ({speech})
//   reply   ({text?, delta?, done?, interrupted?})
//   audio   ({stream}) the reply audio stream (attach it to an <audio> element)
//   error   ({code, message})  mic-denied, no-microphone, insecure-context,
//                              unauthorized, unreachable, disconnected, server codes
//   log     ({message})

const PING_MS = 30000;
const GATHER_TIMEOUT_MS = 5000;

export class HearthClient extends EventTarget {
  constructor({ url = "", apiKey = "", iceServers = [], reconnect = true } = {}) {
    super();
    this.url = (url || window.location.origin).replace(/\/+$/, "");
    this.apiKey = apiKey;
    this.iceServers = iceServers;
    this.reconnect = reconnect;
    this.state = "closed";
    this.mode = "idle"; // idle | push-to-talk | hands-free
    this.options = {};
    this.pc = null;
    this.channel = null;
    this.sender = null;
    this.micStream = null;
    this.replyStream = null;
    this.sessionId = null;
    this._closing = false;
    this._retries = 0;
    this._timer = null;
    this._ping = null;
    this._epoch = 0; // bumped by connect() and close(): late awaits of an older attempt stop
    this._pendingStart = null;
  }

  _emit(type, detail = {}) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }

  _setState(state) {
    this.state = state;
    this._emit("state", { state });
  }

  get micTrack() {
    return this.micStream ? this.micStream.getAudioTracks()[0] : null;
  }

  /** Ask for the microphone and open the session. */
  async connect() {
    this._closing = false;
    const epoch = ++this._epoch;
    this._setState(this._retries ? "reconnecting" : "connecting");
    if (this.micTrack && this.micTrack.readyState === "ended") this._dropMicrophone();
    if (!this.micStream) {
      if (!window.isSecureContext || !navigator.mediaDevices) {
        this._fail(
          "insecure-context",
          `The microphone needs a secure page (HTTPS); this page is ${window.location.origin}.`,
          false,
        );
        return;
      }
      let stream;
      try {
        stream = await navigator.mediaDevices.getUserMedia({
          audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
          video: false,
        });
      } catch (err) {
        if (epoch !== this._epoch) return;
        const denied = err && (err.name === "NotAllowedError" || err.name === "SecurityError");
        this._fail(
          denied ? "mic-denied" : "no-microphone",
          denied
            ? "Microphone access was denied. Allow it for this site (the lock icon in the address bar) and reload."
            : `No microphone available: ${err && err.message ? err.message : err}`,
          false,
        );
        return;
      }
      if (epoch !== this._epoch) {
        stream.getTracks().forEach((t) => t.stop()); // closed while the prompt was open
        return;
      }
      if (!stream.getAudioTracks().length) {
        this._fail("no-microphone", "The microphone gave no audio.", false);
        return;
      }
      this.micStream = stream;
      // The microphone can end under us (unplugged, taken by a call): get it again.
      stream.getAudioTracks()[0].addEventListener("ended", () => {
        if (this.micStream !== stream || this._closing) return;
        this._dropMicrophone();
        this._fail("no-microphone", "The microphone stopped; reconnecting.", true);
      });
    }
    try {
      await this._negotiate(epoch);
      if (epoch !== this._epoch) return;
      this._retries = 0;
    } catch (err) {
      if (epoch !== this._epoch) return; // closed or restarted meanwhile
      const code = err.code || "unreachable";
      const retry = code !== "unauthorized";
      this._fail(code, err.message || String(err), retry);
    }
  }

  _dropMicrophone() {
    if (this.micStream) this.micStream.getTracks().forEach((t) => t.stop());
    this.micStream = null;
  }

  async _negotiate(epoch) {
    this._teardown();
    const pc = new RTCPeerConnection({ iceServers: this.iceServers });
    this.pc = pc;
    const channel = pc.createDataChannel("hearth", { ordered: true });
    this.channel = channel;
    const transceiver = pc.addTransceiver(this.micTrack, { direction: "sendrecv", streams: [this.micStream] });
    this.sender = transceiver.sender;
    pc.ontrack = (event) => {
      this.replyStream = event.streams && event.streams[0] ? event.streams[0] : new MediaStream([event.track]);
      this._emit("audio", { stream: this.replyStream });
    };
    pc.onconnectionstatechange = () => {
      if (pc !== this.pc) return;
      if (pc.connectionState === "failed" || pc.connectionState === "closed") {
        this._fail("disconnected", "The connection to Hearth dropped.", true);
      }
    };
    channel.onopen = async () => {
      const resume = this.mode; // before listeners of "connected" change it
      this._setState("connected");
      this._ping = setInterval(() => this.send({ type: "ping" }), PING_MS);
      if (resume === "hands-free" && this.mode === "hands-free") {
        // A reconnect while listening: resume where the old session was.
        await this.sender.replaceTrack(this.micTrack);
        this.send({ type: "listen", obj: this.options });
      } else if (resume === "push-to-talk" && this.mode === "push-to-talk") {
        this.mode = "idle"; // the utterance in progress went with the old session
      }
    };
    channel.onclose = () => {
      if (channel === this.channel && !this._closing) {
        this._fail("disconnected", "The connection to Hearth dropped.", true);
      }
    };
    channel.onmessage = (event) => this._onMessage(event.data);

    const stale = () => epoch !== this._epoch || pc !== this.pc;
    await pc.setLocalDescription(await pc.createOffer());
    await waitForGathering(pc, GATHER_TIMEOUT_MS);
    if (stale()) return;
    await transceiver.sender.replaceTrack(null); // paused until the person talks
    const headers = { "Content-Type": "application/json" };
    if (this.apiKey) headers["X-API-Key"] = this.apiKey;
    let response;
    try {
      response = await fetch(`${this.url}/api/rtc/asr`, {
        method: "POST",
        headers,
        body: JSON.stringify({ sdp: pc.localDescription.sdp, type: pc.localDescription.type }),
      });
    } catch (err) {
      throw codedError("unreachable", `Hearth is unreachable at ${this.url} (${err.message || err}).`);
    }
    if (stale()) return;
    if (response.status === 401) {
      throw codedError("unauthorized", "Hearth refused the API key: check the key in the settings.");
    }
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      const message = (body && (body.message || (body.error && (body.error.message || body.error)))) || response.statusText;
      throw codedError(body.code || `http-${response.status}`, `Hearth: ${message}`);
    }
    if (stale()) return;
    this.sessionId = body.session;
    await pc.setRemoteDescription({ sdp: body.sdp, type: body.type });
  }

  _onMessage(raw) {
    let message;
    try {
      message = JSON.parse(raw);
    } catch {
      this._emit("log", { message: `unreadable message: ${raw}` });
      return;
    }
    const obj = message.obj || {};
    switch (message.type) {
      case "partial":
        this._emit("partial", { text: obj.text || "" });
        break;
      case "infer":
        this._emit("final", obj);
        break;
      case "vad":
        this._emit("vad", { speech: !!obj.speech });
        break;
      case "reply":
        this._emit("reply", obj);
        break;
      case "error":
        this._emit("error", { code: obj.code || "error", message: message.message || "error" });
        break;
      case "log":
        this._emit("log", { message: message.message || "" });
        break;
      case "wake":
        // Wake mode: {event: "detected" | "waiting", name, phrase}.
        this._emit("wake", obj);
        break;
      case "state":
        if (obj.wake) this._emit("wake", { event: "waiting", ...obj.wake });
        break;
      default:
        break; // pong: nothing to show
    }
  }

  _fail(code, message, retry) {
    this._emit("error", { code, message });
    this._teardown();
    if (retry && this.reconnect && !this._closing) {
      const delay = Math.min(30000, 1000 * 2 ** Math.min(this._retries, 5));
      this._retries += 1;
      this._setState("reconnecting");
      this._timer = setTimeout(() => this.connect(), delay);
    } else {
      this._dropMicrophone(); // no recording indicator while nothing can be sent
      this._setState("error");
    }
  }

  _teardown() {
    clearInterval(this._ping);
    this._ping = null;
    clearTimeout(this._timer);
    this._timer = null;
    const pc = this.pc;
    this.pc = null;
    this.channel = null;
    this.sender = null;
    if (pc) pc.close();
  }

  /** Send a data-channel message (dropped while disconnected). */
  send(message) {
    if (this.channel && this.channel.readyState === "open") {
      this.channel.send(JSON.stringify(message));
      return true;
    }
    return false;
  }

  _requireSession() {
    if (!this.sender || !this.channel || this.channel.readyState !== "open") {
      throw codedError("not-connected", "Not connected to Hearth yet.");
    }
  }

  /** Push-to-talk: start sending the microphone (stops a reply that is playing). */
  async startTalking(options = {}) {
    this._requireSession();
    this.options = options;
    this.mode = "push-to-talk";
    this.send({ type: "start", obj: options }); // first: a quick release must find it sent
    this._pendingStart = this.sender.replaceTrack(this.micTrack);
    try {
      await this._pendingStart;
    } finally {
      this._pendingStart = null;
    }
  }

  /** Push-to-talk: the utterance is over; the transcript comes as a "final" event. */
  async stopTalking() {
    if (this.mode !== "push-to-talk") return;
    if (this._pendingStart) await this._pendingStart.catch(() => {});
    if (this.mode !== "push-to-talk") return;
    this.mode = "idle";
    this.send({ type: "stop" });
    if (this.sender) await this.sender.replaceTrack(null);
  }

  /** Hands-free: the microphone stays on; Hearth finds each utterance. */
  async listen(options = {}) {
    this._requireSession();
    this.options = options;
    this.mode = "hands-free";
    await this.sender.replaceTrack(this.micTrack);
    this.send({ type: "listen", obj: options });
  }

  /** Leave hands-free mode and pause the microphone. */
  async mute() {
    this.mode = "idle";
    this.send({ type: "mute" });
    if (this.sender) await this.sender.replaceTrack(null);
  }

  /** Speak text from elsewhere (e.g. Home Assistant's agent) with Hearth's TTS;
   * the audio comes on the reply stream, a "reply" event ({text, done}) when queued. */
  say(text, { voice } = {}) {
    const obj = { text };
    if (voice) obj.voice = voice;
    return this.send({ type: "say", obj });
  }

  /** Close the session for good. */
  close() {
    this._closing = true;
    this._epoch += 1;
    this._teardown();
    this._dropMicrophone();
    this._setState("closed");
  }
}

function codedError(code, message) {
  const err = new Error(message);
  err.code = code;
  return err;
}

function waitForGathering(pc, timeoutMs) {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      if (pc.iceGatheringState === "complete") {
        pc.removeEventListener("icegatheringstatechange", done);
        resolve();
      }
    };
    pc.addEventListener("icegatheringstatechange", done);
    setTimeout(resolve, timeoutMs); // send what was gathered so far
  });
}
