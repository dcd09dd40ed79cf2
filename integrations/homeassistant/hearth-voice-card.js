// Hearth voice card: talk to your home from a Home Assistant dashboard.
//
// One ES module, no build step, plain Web APIs. Install it through HACS, copy it to
// /config/www, or add it straight from Hearth (https://HEARTH:19001/web/hearth-voice-card.js)
// as a dashboard resource of type "JavaScript module". The WebRTC client is not
// copied here: the card loads /web/hearth-client.js from the Hearth it talks to, the
// same module Hearth's /rtc page uses, so the two always match. README.md next to
// this file explains installation, HTTPS, CORS and the options.
//
// The card keeps one WebRTC session open. Between utterances the microphone track is
// paused, so an idle card costs a few kbps. What the person says goes to Home
// Assistant's conversation agent (assist_pipeline/run from the intent stage, or
// conversation/process) or to Hearth's own LLM; the answer is spoken by Hearth's TTS
// over the same session.

const VERSION = "1.0.0";
const CONVERSATION_IDLE_MS = 5 * 60 * 1000; // a new conversation after 5 quiet minutes
const HA_TIMEOUT_MS = 60000; // local LLM agents can be slow
const CLOSE_GRACE_MS = 10000; // dashboards detach and re-attach cards (edit mode, views)
const RETRY_MAX_MS = 30000;
const MAX_REPLY_CHARS = 2000; // Hearth's default limits.max_text_chars

export const DEFAULTS = Object.freeze({
  title: "Hearth",
  url: "",
  api_key: "",
  mode: "push-to-talk", // push-to-talk | hands-free
  agent: "home-assistant", // home-assistant | hearth
  ha_api: "pipeline", // pipeline (assist_pipeline/run) | conversation (conversation/process)
  pipeline_id: "", // empty: the preferred Assist pipeline
  agent_id: "", // conversation/process only; empty: the default agent
  speak: true, // speak the reply with Hearth's TTS
  voice: "", // empty: Hearth's default voice
  language: "", // empty: Whisper's model default
  wake_word: "", // hands-free only: e.g. okay_nabu; empty: every utterance is heard
});
const CHOICES = {
  mode: ["push-to-talk", "hands-free"],
  agent: ["home-assistant", "hearth"],
  ha_api: ["pipeline", "conversation"],
};

/** A short two-note chime (Web Audio): the wake word was heard. */
function chime() {
  try {
    const ctx = chime.ctx || (chime.ctx = new AudioContext());
    [880, 1320].forEach((freq, i) => {
      const osc = ctx.createOscillator();
      const gain = ctx.createGain();
      const at = ctx.currentTime + i * 0.12;
      osc.frequency.value = freq;
      gain.gain.setValueAtTime(0.15, at);
      gain.gain.exponentialRampToValueAtTime(0.001, at + 0.25);
      osc.connect(gain).connect(ctx.destination);
      osc.start(at);
      osc.stop(at + 0.25);
    });
  } catch {
    /* no audio output: the card's text still says it */
  }
}

/** Check a card configuration; returns it with defaults filled in, or throws. */
export function normalizeConfig(config) {
  if (!config || typeof config !== "object") throw new Error("Hearth card: the configuration must be a mapping");
  const out = { ...DEFAULTS, ...config };
  for (const key of ["title", "url", "api_key", "pipeline_id", "agent_id", "voice", "language", "wake_word"]) {
    if (out[key] === null || out[key] === undefined) out[key] = "";
    if (typeof out[key] !== "string") throw new Error(`Hearth card: '${key}' must be text`);
  }
  if (!out.url) throw new Error("Hearth card: set 'url' to Hearth's address, e.g. https://hearth.local:19001");
  let parsed;
  try {
    parsed = new URL(out.url);
  } catch {
    throw new Error(`Hearth card: 'url' is not a URL: ${out.url}`);
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new Error("Hearth card: 'url' must start with https:// (or http://)");
  }
  out.url = out.url.replace(/\/+$/, "");
  for (const [key, allowed] of Object.entries(CHOICES)) {
    if (!allowed.includes(out[key])) throw new Error(`Hearth card: '${key}' must be one of ${allowed.join(", ")}`);
  }
  if (typeof out.speak !== "boolean") throw new Error("Hearth card: 'speak' must be true or false");
  return out;
}

// One import per Hearth URL. A failed module import stays failed in the browser's
// module map, so a retry asks for a fresh URL.
const clients = new Map();
let loadAttempts = 0;
function loadClient(url) {
  if (!clients.has(url)) {
    const retry = loadAttempts++ ? `?retry=${loadAttempts}` : "";
    const pending = import(`${url}/web/hearth-client.js${retry}`).catch((err) => {
      clients.delete(url);
      throw err;
    });
    clients.set(url, pending);
  }
  return clients.get(url);
}

const MIC = "M12,2A3,3 0 0,1 15,5V11A3,3 0 0,1 12,14A3,3 0 0,1 9,11V5A3,3 0 0,1 12,2M19,11C19,14.53 16.39,17.44 13,17.93V21H11V17.93C7.61,17.44 5,14.53 5,11H7A5,5 0 0,0 12,16A5,5 0 0,0 17,11H19Z";
const MIC_OFF = "M19,11C19,12.19 18.66,13.3 18.1,14.28L16.87,13.05C17.14,12.43 17.3,11.74 17.3,11H19M15,11.16L9,5.18V5A3,3 0 0,1 12,2A3,3 0 0,1 15,5V11L15,11.16M4.27,3L21,19.73L19.73,21L15.54,16.81C14.77,17.27 13.91,17.58 13,17.72V21H11V17.72C7.72,17.23 5,14.41 5,11H6.7C6.7,14 9.24,16.1 12,16.1C12.81,16.1 13.6,15.91 14.31,15.58L12.65,13.92L12,14A3,3 0 0,1 9,11V10.28L3,4.27L4.27,3Z";

const STYLE = `
  :host { display: block; }
  ha-card {
    display: block; box-sizing: border-box; height: 100%; padding: 16px;
    background: var(--ha-card-background, var(--card-background-color, #fff));
    border-radius: var(--ha-card-border-radius, 12px);
    color: var(--primary-text-color, #212121);
  }
  .header { display: flex; align-items: center; justify-content: space-between; gap: 8px; }
  .title { font-size: 1.2em; font-weight: 500; }
  .state { display: flex; align-items: center; gap: 6px; font-size: 0.85em; color: var(--secondary-text-color, #727272); }
  .dot { width: 8px; height: 8px; border-radius: 50%; background: var(--disabled-text-color, #bdbdbd); }
  .state[data-state="connected"] .dot { background: var(--success-color, #43a047); }
  .state[data-state="connecting"] .dot, .state[data-state="reconnecting"] .dot { background: var(--warning-color, #ffa600); }
  .state[data-state="error"] .dot { background: var(--error-color, #db4437); }
  .body { display: flex; gap: 16px; align-items: center; margin-top: 12px; }
  button.talk {
    flex: none; width: 72px; height: 72px; border-radius: 50%; border: none; cursor: pointer;
    background: var(--primary-color, #03a9f4); color: var(--text-primary-color, #fff);
    touch-action: none; user-select: none; -webkit-user-select: none;
    box-shadow: 0 0 0 calc(var(--level, 0) * 20px) rgba(3, 169, 244, 0.25);
    transition: background 0.15s;
  }
  button.talk svg { width: 36px; height: 36px; fill: currentColor; }
  button.talk.active { background: var(--accent-color, #ff9800); }
  button.talk.paused { background: var(--disabled-text-color, #9e9e9e); }
  button.talk:disabled { opacity: 0.45; cursor: default; }
  button.talk:focus-visible { outline: 3px solid var(--accent-color, #ff9800); outline-offset: 2px; }
  .lines { flex: 1; min-width: 0; }
  .label { font-size: 0.75em; letter-spacing: 0.04em; text-transform: uppercase; color: var(--secondary-text-color, #727272); }
  .you, .reply { margin: 2px 0 8px; min-height: 1.3em; overflow-wrap: anywhere; }
  .you.partial, .you:empty::before { font-style: italic; color: var(--secondary-text-color, #727272); }
  .you:empty::before { content: attr(data-placeholder); }
  .reply.speaking { color: var(--primary-color, #03a9f4); }
  .hint { font-size: 0.85em; color: var(--secondary-text-color, #727272); }
  .error {
    margin-top: 12px; padding: 8px 12px; border-radius: 8px;
    background: rgba(219, 68, 55, 0.12); color: var(--error-color, #db4437);
  }
  [hidden] { display: none !important; }
`;

function icon(path) {
  return `<svg viewBox="0 0 24 24" aria-hidden="true"><path d="${path}"></path></svg>`;
}

class HearthVoiceCard extends HTMLElement {
  static getConfigElement() {
    return document.createElement("hearth-voice-card-editor");
  }

  static getStubConfig() {
    return { url: "https://hearth.local:19001", mode: "push-to-talk", agent: "home-assistant", speak: true };
  }

  constructor() {
    super();
    this._config = null;
    this._hass = null;
    this.client = null;
    this._starting = false;
    this._paused = false;
    this._retry = 0;
    this._retryTimer = null;
    this._closeTimer = null;
    this._conversationId = null;
    this._conversationAt = 0;
    this._asking = 0;
    this._meter = null;
    this._listeners = null; // AbortController of the current client's listeners
    this._preview = false;
    /** Reply audio seen by the card's level meter (diagnostics, tests). */
    this.heard = { frames: 0, peak: 0 };
    this.attachShadow({ mode: "open" });
    this.shadowRoot.innerHTML = `
      <style>${STYLE}</style>
      <ha-card>
        <div class="header">
          <div class="title"></div>
          <div class="state" data-state="closed" role="status"><span class="dot"></span><span class="state-text">Not connected</span></div>
        </div>
        <div class="body">
          <button class="talk" type="button" disabled>${icon(MIC)}</button>
          <div class="lines">
            <div class="label">You</div>
            <div class="you"></div>
            <div class="label">Reply</div>
            <div class="reply" aria-live="polite"></div>
          </div>
        </div>
        <div class="hint"></div>
        <div class="error" role="alert" hidden></div>
        <audio class="player" autoplay playsinline></audio>
      </ha-card>`;
    const $ = (selector) => this.shadowRoot.querySelector(selector);
    this._els = {
      title: $(".title"),
      state: $(".state"),
      stateText: $(".state-text"),
      talk: $(".talk"),
      you: $(".you"),
      reply: $(".reply"),
      hint: $(".hint"),
      error: $(".error"),
      audio: $(".player"),
    };
    this._bindTalkButton();
  }

  // ------------------------------------------------------------ Lovelace API

  setConfig(config) {
    const next = normalizeConfig(config);
    const previous = this._config;
    this._config = next;
    this._els.title.textContent = next.title;
    this._renderButton();
    const session = ["url", "api_key"];
    if (previous && session.some((key) => previous[key] !== next[key])) {
      this._stop();
      this._start();
    } else if (previous && this.client) {
      if (previous.mode !== next.mode) this._paused = false;
      const options = ["mode", "agent", "speak", "voice", "language", "wake_word"];
      if (options.some((key) => previous[key] !== next[key])) this._applyMode(true);
    } else {
      this._start();
    }
  }

  /** Set by Home Assistant in the card editor's preview: no microphone, no session. */
  set preview(value) {
    this._preview = !!value;
    if (this._preview) {
      this._stop();
      this._setHint("Preview: the card connects on the dashboard.");
    } else {
      this._setHint("");
      this._start();
    }
  }

  get preview() {
    return this._preview;
  }

  set hass(hass) {
    this._hass = hass;
  }

  get hass() {
    return this._hass;
  }

  getCardSize() {
    return 3;
  }

  getGridOptions() {
    return { columns: 6, min_columns: 4, rows: 3, min_rows: 3 };
  }

  connectedCallback() {
    clearTimeout(this._closeTimer);
    this._start();
  }

  disconnectedCallback() {
    clearTimeout(this._closeTimer);
    this._closeTimer = setTimeout(() => this._stop(), CLOSE_GRACE_MS);
  }

  // ------------------------------------------------------------ session

  async _start() {
    if (!this._config || !this.isConnected || this._preview || this.client || this._starting) return;
    this._starting = true;
    clearTimeout(this._retryTimer);
    const { url } = this._config;
    this._setState("connecting");
    let module;
    try {
      module = await loadClient(url);
    } catch (err) {
      this._starting = false;
      this._showError("unreachable", `Could not load Hearth's client from ${url}.`);
      this._setState("reconnecting");
      const delay = Math.min(RETRY_MAX_MS, 2000 * 2 ** Math.min(this._retry++, 4));
      this._retryTimer = setTimeout(() => this._start(), delay);
      return;
    }
    this._starting = false;
    if (this.client || !this._config || !this.isConnected || this._preview) return;
    if (this._config.url !== url) {
      this._start(); // the URL changed while the module loaded
      return;
    }
    this._retry = 0;
    const client = new module.HearthClient({ url, apiKey: this._config.api_key });
    this.client = client;
    const listeners = new AbortController();
    this._listeners = listeners;
    const on = (type, handler) => client.addEventListener(type, (e) => handler(e.detail), { signal: listeners.signal });
    on("state", (d) => this._onState(d.state));
    on("partial", (d) => this._showYou(d.text, true));
    on("final", (d) => this._onFinal(d));
    on("vad", (d) => this._onVad(d.speech));
    on("wake", (d) => this._onWake(d));
    on("reply", (d) => this._onReply(d));
    on("audio", (d) => this._onAudio(d.stream));
    on("error", (d) => this._showError(d.code, d.message));
    await client.connect();
  }

  _stop() {
    clearTimeout(this._retryTimer);
    if (this._listeners) this._listeners.abort();
    this._listeners = null;
    const client = this.client;
    this.client = null;
    this._asking += 1; // an answer still on its way is not spoken
    if (client) client.close();
    if (this._meter) {
      this._meter.context.close().catch(() => {});
      this._meter = null;
    }
    this._els.audio.srcObject = null;
    this._setState("closed");
  }

  _onState(state) {
    this._setState(state);
    if (state === "connected") {
      this._clearError();
      this._applyMode();
    } else {
      this._releaseTalk(); // a press held across a disconnect
    }
  }

  _onVad(speech) {
    const client = this.client;
    this._els.talk.classList.toggle("active", speech || (!!client && client.mode === "push-to-talk"));
    if (speech) this._asking += 1; // talking again: an answer on its way is stale
  }

  /** Wake mode: "listening for 'okay nabu'" while waiting; a chime when it is heard. */
  _onWake(wake) {
    this._wakeHeard = wake.event === "detected";
    this._wakePhrase = wake.phrase || this._config.wake_word;
    if (this._wakeHeard) chime();
    this._renderButton();
  }

  _hearthOptions() {
    const config = this._config;
    const options = {};
    if (config.language) options.language = config.language;
    if (config.wake_word && config.mode === "hands-free") options.wake_word = config.wake_word;
    if (config.agent === "hearth") {
      options.reply = true;
      options.speak = config.speak;
      if (config.voice) options.voice = config.voice;
    }
    return options;
  }

  /** After connecting or a change of mode or options: hands-free listens unless paused.
   * ``restart``: send ``listen`` again even when already listening (new options). */
  async _applyMode(restart = false) {
    const client = this.client;
    if (!client || client.state !== "connected") return;
    try {
      if (this._config.mode === "hands-free" && !this._paused) {
        if (restart || client.mode !== "hands-free") {
          this._asking += 1;
          await client.listen(this._hearthOptions());
        }
      } else if (client.mode === "hands-free") {
        await client.mute();
      }
    } catch (err) {
      this._showError(err.code || "error", err.message || String(err));
    }
    this._renderButton();
  }

  // ------------------------------------------------------------ talking

  _bindTalkButton() {
    const talk = this._els.talk;
    // The press being held: a pointer id, "key", or null.
    this._held = null;
    const press = (event, holder) => {
      event.preventDefault();
      this._unlockAudio();
      if (!this.client || !this._config) return;
      if (this._config.mode === "hands-free") {
        this._paused = !this._paused;
        this._applyMode();
        return;
      }
      if (this._held !== null) return;
      this._held = holder;
      try {
        if (typeof holder === "number") talk.setPointerCapture(holder);
      } catch {
        // no active pointer (synthetic event): release comes from pointerup anyway
      }
      talk.classList.add("active");
      this._showYou("", true);
      this._asking += 1; // a new question: an answer still on its way is stale
      this.client.startTalking(this._hearthOptions()).catch((err) => {
        this._held = null;
        talk.classList.remove("active");
        this._showError(err.code || "error", err.message || String(err));
      });
    };
    const release = (event, holder) => {
      if (this._held === null || this._held !== holder) return;
      event.preventDefault();
      this._releaseTalk();
    };
    talk.addEventListener("pointerdown", (e) => {
      if (e.button === 0 || e.button === undefined) press(e, e.pointerId ?? 0);
    });
    for (const type of ["pointerup", "pointercancel", "lostpointercapture"]) {
      talk.addEventListener(type, (e) => release(e, e.pointerId ?? 0));
    }
    talk.addEventListener("contextmenu", (e) => e.preventDefault()); // long-press on phones
    talk.addEventListener("keydown", (e) => {
      if ((e.key === " " || e.key === "Enter") && !e.repeat) press(e, "key");
    });
    talk.addEventListener("keyup", (e) => {
      if (e.key === " " || e.key === "Enter") release(e, "key");
    });
  }

  _releaseTalk() {
    if (this._held === null) return;
    this._held = null;
    this._els.talk.classList.remove("active");
    if (this.client) this.client.stopTalking().catch(() => {});
  }

  _onFinal(detail) {
    const text = (detail.text || "").trim();
    this._showYou(text || "(nothing heard)", !text);
    if (text) this._clearError(); // it works again
    if (!text || this._config.agent !== "home-assistant") return;
    this._askHomeAssistant(text, detail.language);
  }

  async _askHomeAssistant(text, spokenLanguage) {
    const config = this._config;
    const hass = this._hass;
    if (!hass) {
      this._showError("no-hass", "Home Assistant is not connected to this card yet.");
      return;
    }
    const ask = ++this._asking;
    this._showReply("…", false);
    if (Date.now() - this._conversationAt > CONVERSATION_IDLE_MS) this._conversationId = null;
    let result;
    try {
      result =
        config.ha_api === "conversation"
          ? await this._conversationProcess(hass, text, spokenLanguage)
          : await this._runPipeline(hass, text);
    } catch (err) {
      if (ask !== this._asking) return;
      this._showReply("", false);
      this._showError("home-assistant", `Home Assistant: ${(err && (err.message || err.code)) || err}`);
      return;
    }
    if (ask !== this._asking) return; // the person asked again meanwhile
    this._conversationId = (result && result.conversation_id) || this._conversationId;
    this._conversationAt = Date.now();
    const speech = answerText(result);
    this._showReply(speech || "(no answer)", false);
    if (speech && config.speak && this.client) {
      // Whole characters: a cut must not split a surrogate pair.
      this.client.say(Array.from(speech).slice(0, MAX_REPLY_CHARS).join(""), { voice: config.voice });
    }
  }

  _conversationProcess(hass, text, spokenLanguage) {
    const config = this._config;
    const message = { type: "conversation/process", text };
    if (this._conversationId) message.conversation_id = this._conversationId;
    if (config.agent_id) message.agent_id = config.agent_id;
    const configured = config.language && config.language !== "auto" ? config.language : "";
    const language = configured || spokenLanguage || hass.language;
    if (language) message.language = language;
    return withTimeout(hass.callWS(message), HA_TIMEOUT_MS);
  }

  _runPipeline(hass, text) {
    const config = this._config;
    const message = { type: "assist_pipeline/run", start_stage: "intent", end_stage: "intent", input: { text } };
    if (config.pipeline_id) message.pipeline = config.pipeline_id;
    if (this._conversationId) message.conversation_id = this._conversationId;
    // The subscription ends at run-end, on an error or at the timeout; the answer
    // comes with intent-end.
    let unsubscribe = null;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      if (unsubscribe) Promise.resolve(unsubscribe()).catch(() => {});
    };
    const answer = new Promise((resolve, reject) => {
      const onEvent = (event) => {
        const data = (event && event.data) || {};
        if (event.type === "intent-end") {
          resolve(data.intent_output || {});
        } else if (event.type === "error") {
          end();
          reject(new Error(`${data.message || "pipeline error"} (${data.code || "error"})`));
        } else if (event.type === "run-end") {
          end();
          reject(new Error("the pipeline ended without an answer"));
        }
      };
      // No resubscribe: after a websocket reconnect Home Assistant would run it again.
      Promise.resolve(hass.connection.subscribeMessage(onEvent, message, { resubscribe: false })).then(
        (unsub) => {
          unsubscribe = unsub;
          if (ended && unsub) Promise.resolve(unsub()).catch(() => {});
        },
        (err) => {
          end();
          reject(err);
        },
      );
    });
    return withTimeout(answer, HA_TIMEOUT_MS).catch((err) => {
      end();
      throw err;
    });
  }

  _onReply(detail) {
    if (detail.interrupted) {
      this._els.reply.classList.remove("speaking");
      this._replyDraft = "";
      return;
    }
    if (this._config.agent === "hearth") {
      if (detail.delta) this._showReply((this._replyDraft || "") + detail.delta, true);
      if (detail.done && detail.text !== undefined) this._showReply(detail.text || "(no answer)", false);
    }
  }

  // ------------------------------------------------------------ reply audio

  _onAudio(stream) {
    const audio = this._els.audio;
    audio.srcObject = stream;
    audio.play().then(
      () => this._setHint(""),
      () => this._setHint("Tap the microphone once to turn on sound."),
    );
    this._attachMeter(stream);
  }

  _unlockAudio() {
    const audio = this._els.audio;
    if (audio.srcObject && audio.paused) audio.play().then(() => this._setHint(""), () => {});
    if (this._meter && this._meter.context.state === "suspended") this._meter.context.resume().catch(() => {});
  }

  /** A level meter on the reply audio: the button's halo follows the voice. */
  _attachMeter(stream) {
    const Context = window.AudioContext || window.webkitAudioContext;
    if (!Context) return;
    if (this._meter) this._meter.context.close().catch(() => {});
    const context = new Context();
    const analyser = context.createAnalyser();
    analyser.fftSize = 1024;
    try {
      context.createMediaStreamSource(stream).connect(analyser);
    } catch {
      context.close().catch(() => {}); // no meter; the <audio> element still plays
      return;
    }
    const samples = new Float32Array(analyser.fftSize);
    const meter = { context, analyser };
    this._meter = meter;
    const tick = () => {
      if (this._meter !== meter) return;
      analyser.getFloatTimeDomainData(samples);
      let sum = 0;
      for (const s of samples) sum += s * s;
      const rms = Math.sqrt(sum / samples.length);
      const loud = rms > 0.005;
      if (loud) this.heard.frames += 1;
      this.heard.peak = Math.max(this.heard.peak, rms);
      if (loud || meter.loud) {
        // Styles are touched only while there is sound (wall tablets run for days).
        this._els.talk.style.setProperty("--level", loud ? Math.min(1, rms * 8).toFixed(3) : "0");
        this._els.reply.classList.toggle("speaking", loud);
      }
      meter.loud = loud;
      setTimeout(tick, loud ? 50 : 100);
    };
    tick();
  }

  // ------------------------------------------------------------ rendering

  _setState(state) {
    const labels = {
      connecting: "Connecting…",
      connected: "Ready",
      reconnecting: "Reconnecting…",
      error: "Error",
      closed: "Not connected",
    };
    this._els.state.dataset.state = state;
    this._els.stateText.textContent = labels[state] || state;
    this._renderButton();
  }

  _renderButton() {
    const talk = this._els.talk;
    const connected = !!this.client && this.client.state === "connected";
    talk.disabled = !connected;
    const handsFree = this._config && this._config.mode === "hands-free";
    const paused = handsFree && this._paused;
    talk.classList.toggle("paused", !!paused);
    talk.innerHTML = icon(paused ? MIC_OFF : MIC);
    const label = handsFree ? (paused ? "Paused: tap to listen" : "Listening: tap to pause") : "Hold to talk";
    talk.title = label;
    const wake = handsFree && this._config.wake_word && !paused;
    const phrase = (this._wakePhrase || this._config?.wake_word || "").replace(/_/g, " ").toLowerCase();
    this._els.you.dataset.placeholder = handsFree
      ? paused ? "Paused" : wake && !this._wakeHeard ? `Listening for “${phrase}”` : "Say something…"
      : "Hold the button and speak";
    talk.setAttribute("aria-label", label);
    if (handsFree) talk.setAttribute("aria-pressed", String(!paused));
    else talk.removeAttribute("aria-pressed");
  }

  _showYou(text, partial) {
    this._els.you.textContent = text;
    this._els.you.classList.toggle("partial", !!partial);
  }

  _showReply(text, draft) {
    this._replyDraft = draft ? text : "";
    this._els.reply.textContent = text;
  }

  _setHint(text) {
    this._els.hint.textContent = text;
    this._els.hint.hidden = !text;
  }

  _showError(code, message) {
    const error = this._els.error;
    error.dataset.code = code;
    error.textContent = explain(code, message, this._config);
    error.hidden = false;
  }

  _clearError() {
    this._els.error.hidden = true;
    this._els.error.textContent = "";
    delete this._els.error.dataset.code;
  }
}

/** The spoken answer in a conversation result (conversation/process, intent-end). */
function answerText(result) {
  const speech = result && result.response && result.response.speech;
  if (!speech) return "";
  const plain = speech.plain || speech.ssml;
  return (plain && plain.speech) || "";
}

/** An error's message with what a person can do about it. */
function explain(code, message, config) {
  const here = window.location.origin;
  const url = config ? config.url : "";
  if (code === "unauthorized") {
    return "Hearth refused the API key: set the card's api_key to Hearth's auth.api_key.";
  }
  if (code === "unreachable" || code === "disconnected") {
    if (window.location.protocol === "https:" && url.startsWith("http:")) {
      return `${message} This dashboard is served over HTTPS, so Hearth must be too: use its https:// address (port 19001 by default).`;
    }
    return `${message} Check that Hearth runs, that ${here} is listed in its http.cors_origins, and that this browser trusts its certificate (open ${url}/api/ping once).`;
  }
  if (code === "insecure-context") return `${message} Open Home Assistant over HTTPS to use the microphone.`;
  return message;
}

function withTimeout(promise, ms) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// ------------------------------------------------------------------ editor

const FIELDS = [
  { key: "title", label: "Title", type: "text" },
  { key: "url", label: "Hearth URL", type: "text", placeholder: "https://hearth.local:19001" },
  { key: "api_key", label: "API key", type: "password" },
  { key: "mode", label: "Mode", type: "select", options: [["push-to-talk", "Push to talk"], ["hands-free", "Hands-free"]] },
  { key: "agent", label: "Send what I say to", type: "select", options: [["home-assistant", "Home Assistant's conversation agent"], ["hearth", "Hearth's LLM"]] },
  { key: "ha_api", label: "Home Assistant API", type: "select", when: (c) => c.agent !== "hearth", options: [["pipeline", "Assist pipeline (intent stage)"], ["conversation", "conversation/process"]] },
  { key: "pipeline_id", label: "Assist pipeline", type: "select", when: (c) => c.agent !== "hearth" && c.ha_api !== "conversation", options: [["", "Preferred pipeline"]] },
  { key: "agent_id", label: "Conversation agent id (empty: default)", type: "text", when: (c) => c.agent !== "hearth" && c.ha_api === "conversation" },
  { key: "speak", label: "Speak the reply with Hearth's TTS", type: "checkbox" },
  { key: "voice", label: "Voice", type: "select", when: (c) => c.speak !== false, options: [["", "Hearth's default voice"]] },
  { key: "language", label: "Language of speech (empty: the model's default)", type: "text", placeholder: "en" },
  { key: "wake_word", label: "Wake word, hands-free only (e.g. okay_nabu; empty: none)", type: "text", placeholder: "okay_nabu" },
];

class HearthVoiceCardEditor extends HTMLElement {
  constructor() {
    super();
    this._config = {};
    this._hass = null;
    this._voicesFor = null;
    this._pipelinesLoaded = false;
    this.attachShadow({ mode: "open" });
    this.shadowRoot.innerHTML = `
      <style>
        .form { display: grid; gap: 12px; }
        label { display: grid; gap: 4px; font-size: 0.9em; color: var(--secondary-text-color, #727272); }
        label.check { display: flex; align-items: center; gap: 8px; color: var(--primary-text-color, #212121); }
        input[type="text"], input[type="password"], select {
          font: inherit; padding: 8px; border-radius: 6px; color: var(--primary-text-color, #212121);
          border: 1px solid var(--divider-color, #ccc); background: var(--card-background-color, #fff);
        }
        .note { font-size: 0.85em; color: var(--secondary-text-color, #727272); }
        [hidden] { display: none !important; }
      </style>
      <div class="form"></div>
      <div class="note"></div>`;
    this._form = this.shadowRoot.querySelector(".form");
    this._note = this.shadowRoot.querySelector(".note");
    this._inputs = {};
    for (const field of FIELDS) this._form.append(this._field(field));
  }

  _field(field) {
    const label = document.createElement("label");
    let input;
    if (field.type === "select") {
      input = document.createElement("select");
      for (const [value, text] of field.options) input.append(new Option(text, value));
    } else {
      input = document.createElement("input");
      input.type = field.type;
      if (field.placeholder) input.placeholder = field.placeholder;
    }
    input.name = field.key;
    if (field.type === "checkbox") {
      label.className = "check";
      label.append(input, document.createTextNode(field.label));
    } else {
      label.append(document.createTextNode(field.label), input);
    }
    input.addEventListener("change", () => this._changed(field, input));
    this._inputs[field.key] = { field, input, label };
    return label;
  }

  setConfig(config) {
    this._config = { ...config };
    this._render();
    this._loadVoices();
  }

  set hass(hass) {
    this._hass = hass;
    this._loadPipelines();
  }

  _render() {
    const config = { ...DEFAULTS, ...this._config };
    for (const { field, input, label } of Object.values(this._inputs)) {
      const value = config[field.key];
      if (field.type === "checkbox") input.checked = value !== false;
      else {
        if (field.type === "select" && ![...input.options].some((o) => o.value === value)) {
          input.append(new Option(value, value)); // a value from YAML the lists do not know
        }
        input.value = value === undefined ? "" : value;
      }
      label.hidden = field.when ? !field.when(config) : false;
    }
  }

  _changed(field, input) {
    const value = field.type === "checkbox" ? input.checked : input.value.trim();
    const config = { ...this._config };
    if (value === DEFAULTS[field.key] && field.key !== "url") delete config[field.key];
    else config[field.key] = value;
    this._config = config;
    this._render();
    if (field.key === "url" || field.key === "api_key") this._loadVoices();
    this.dispatchEvent(new CustomEvent("config-changed", { detail: { config }, bubbles: true, composed: true }));
  }

  async _loadPipelines() {
    if (this._pipelinesLoaded || !this._hass || !this._hass.callWS) return;
    this._pipelinesLoaded = true; // once per editor, also when it fails (hass is set often)
    try {
      const result = await this._hass.callWS({ type: "assist_pipeline/pipeline/list" });
      const select = this._inputs.pipeline_id.input;
      for (const pipeline of (result && result.pipelines) || []) {
        if (![...select.options].some((o) => o.value === pipeline.id)) select.append(new Option(pipeline.name, pipeline.id));
      }
      this._render();
    } catch {
      // Assist not set up: keep "Preferred pipeline"
    }
  }

  async _loadVoices() {
    let config;
    try {
      config = normalizeConfig(this._config);
    } catch {
      return; // no usable URL yet: the key goes nowhere
    }
    const key = `${config.url}\n${config.api_key}`;
    if (this._voicesFor === key) return;
    this._voicesFor = key;
    const headers = config.api_key ? { "X-API-Key": config.api_key } : {};
    try {
      const response = await fetch(`${config.url}/api/voices`, { headers });
      if (!response.ok) throw new Error(response.status === 401 ? "the API key is wrong" : `HTTP ${response.status}`);
      const { voices } = await response.json();
      if (key !== this._voicesFor) return;
      const select = this._inputs.voice.input;
      select.replaceChildren(new Option("Hearth's default voice", ""));
      for (const voice of voices || []) {
        const language = voice.language ? ` (${voice.language})` : "";
        select.append(new Option(`${voice.display_name || voice.name}${language}`, voice.name));
      }
      this._note.textContent = "";
      this._render();
    } catch (err) {
      if (key !== this._voicesFor) return;
      this._voicesFor = null;
      this._note.textContent = `Could not list Hearth's voices: ${err.message || err}.`;
    }
  }
}

if (!customElements.get("hearth-voice-card")) customElements.define("hearth-voice-card", HearthVoiceCard);
if (!customElements.get("hearth-voice-card-editor")) customElements.define("hearth-voice-card-editor", HearthVoiceCardEditor);

window.customCards = window.customCards || [];
if (!window.customCards.some((card) => card.type === "hearth-voice-card")) {
  window.customCards.push({
    type: "hearth-voice-card",
    name: "Hearth voice",
    description: "Talk to your home through Hearth: push-to-talk or hands-free, replies spoken by Hearth.",
    preview: false,
    documentationURL: "https://github.com/hearth-voice/hearth/tree/main/integrations/homeassistant",
  });
}
console.info(`%c HEARTH-VOICE-CARD %c ${VERSION} `, "color: white; background: #e65100; font-weight: 700;", "color: #e65100; background: white;");
