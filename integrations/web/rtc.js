// The /rtc page: push-to-talk or hands-free speech with Hearth over WebRTC.
import { HearthClient } from "./hearth-client.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(window.location.search);
const storedKey = () => params.get("key") || window.localStorage.getItem("hearth-api-key") || "";

let client = null;
let replyText = "";
// ?mode=hands-free: start listening as soon as a connection is up (once).
let handsFreeOnConnect = params.get("mode") === "hands-free";

function notice(message) {
  const el = $("notice");
  el.textContent = message || "";
  el.hidden = !message;
}

function setState(state) {
  const labels = {
    connecting: "connecting…",
    connected: "connected",
    reconnecting: "reconnecting…",
    closed: "not connected",
    error: "error",
  };
  $("state").dataset.state = state;
  $("state").textContent = labels[state] || state;
  const ready = state === "connected";
  $("talk").disabled = !ready;
  $("handsfree").disabled = !ready;
  if (ready) notice("");
}

function startHandsFreeOnConnect(c) {
  const start = (e) => {
    if (e.detail.state !== "connected") return;
    c.removeEventListener("state", start);
    if (!handsFreeOnConnect || c !== client) return;
    handsFreeOnConnect = false;
    $("handsfree").checked = true;
    c.listen(options());
    talk.disabled = true;
  };
  c.addEventListener("state", start);
}

function options() {
  const wake = $("wake-word").value;
  // Hands-free with a wake word: only what follows the word is transcribed.
  return { reply: $("speak").checked, partials: true, ...(wake ? { wake_word: wake } : {}) };
}

// A short two-note chime when the wake word is heard (no audio file needed).
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
  } catch (err) {
    /* no audio output: the text below still says it */
  }
}

function connect() {
  if (client) client.close();
  client = new HearthClient({ apiKey: storedKey() });
  client.addEventListener("state", (e) => setState(e.detail.state));
  if (handsFreeOnConnect) startHandsFreeOnConnect(client);
  client.addEventListener("partial", (e) => ($("partial").textContent = e.detail.text));
  client.addEventListener("vad", (e) => $("vad").classList.toggle("on", e.detail.speech));
  client.addEventListener("wake", (e) => {
    const { event, phrase } = e.detail;
    if (event === "detected") chime();
    $("wake-state").textContent =
      event === "detected" ? "listening…" : `listening for “${phrase}”`;
  });
  client.addEventListener("final", (e) => {
    $("partial").textContent = "";
    if (!e.detail.text) return;
    const li = document.createElement("li");
    li.textContent = e.detail.text;
    $("finals").prepend(li);
  });
  client.addEventListener("reply", (e) => {
    const d = e.detail;
    if (d.delta !== undefined) replyText += d.delta;
    if (d.text !== undefined) replyText = d.text;
    if (d.interrupted) replyText += " …";
    $("reply").textContent = replyText;
    if (d.done) replyText = "";
  });
  client.addEventListener("audio", (e) => {
    $("reply-audio").srcObject = e.detail.stream;
  });
  client.addEventListener("error", (e) => {
    const { code, message } = e.detail;
    notice(message);
    if (code === "unauthorized") $("key-row").hidden = false;
  });
  client.connect();
}

$("connect").addEventListener("click", () => {
  // Browsers start audio playback only after a user gesture: this click is it.
  $("reply-audio").play().catch(() => {});
  connect();
});

const talk = $("talk");
const press = (event) => {
  event.preventDefault();
  if (!client || client.mode === "hands-free") return;
  talk.classList.add("active");
  client.startTalking(options()).catch((err) => {
    talk.classList.remove("active");
    notice(err.message);
  });
};
const release = (event) => {
  event.preventDefault();
  if (!client || client.mode !== "push-to-talk") return;
  talk.classList.remove("active");
  client.stopTalking();
};
talk.addEventListener("pointerdown", press);
talk.addEventListener("pointerup", release);
talk.addEventListener("pointerleave", release);
talk.addEventListener("keydown", (e) => (e.key === " " || e.key === "Enter") && !e.repeat && press(e));
talk.addEventListener("keyup", (e) => (e.key === " " || e.key === "Enter") && release(e));

$("handsfree").addEventListener("change", (e) => {
  if (!client) return;
  if (e.target.checked) client.listen(options()).catch((err) => notice(err.message));
  else client.mute();
  if (!e.target.checked) $("wake-state").textContent = "";
  talk.disabled = e.target.checked;
});

$("save-key").addEventListener("click", () => {
  window.localStorage.setItem("hearth-api-key", $("key").value);
  $("key-row").hidden = true;
  connect();
});

if (!window.isSecureContext) {
  notice("Browsers allow the microphone only over HTTPS: open this page with https:// (port 19001 by default).");
}
window.hearth = () => client; // for debugging from the console
// Until here a click would do nothing: the button is on once its handler is.
$("connect").disabled = false;
if (params.get("autoconnect") === "1") connect();
