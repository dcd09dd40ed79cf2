// Enrollment page: read prompts, record takes with the microphone, see each take's check.
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(window.location.search);
const key = () => params.get("key") || window.localStorage.getItem("hearth-api-key") || "";
let name = "";
let status = null;
let index = 0;
let recorder = null;

async function api(method, path, body) {
  const headers = key() ? { authorization: `Bearer ${key()}` } : {};
  const resp = await fetch(path, { method, headers, body });
  const data = resp.status === 204 ? {} : await resp.json();
  if (!resp.ok) {
    if (data.code === "unauthorized") $("key-row").hidden = false;
    throw new Error(data.error || data.detail || resp.statusText);
  }
  return data;
}

function notice(text) {
  $("notice").textContent = text;
  $("notice").hidden = !text;
}

function show() {
  $("session").hidden = false;
  $("progress").value = status.progress;
  $("minutes").textContent =
    `${(status.seconds / 60).toFixed(1)} of ${status.target_seconds / 60} minutes, ` +
    `${status.takes} take${status.takes === 1 ? "" : "s"}`;
  $("prompt").textContent = `${index}. ${status.prompts[index].text}`;
}

async function refresh() {
  status = await api("GET", `/api/voices/${encodeURIComponent(name)}/enrollment`);
  index = status.next_prompt ?? 0;
  show();
}

async function send(blob) {
  $("result").textContent = "Checking…";
  try {
    const out = await api("PUT", `/api/voices/${encodeURIComponent(name)}/enrollment/takes/${index}`, blob);
    const take = out.take;
    $("result").textContent = take.accepted
      ? `Accepted (${take.seconds} s, ${take.snr_db} dB SNR).`
      : `Please record again: ${take.problems.join("; ")}`;
    status = out.status;
    if (take.accepted) index = status.next_prompt ?? index;
    show();
  } catch (err) {
    $("result").textContent = `Error: ${err.message}`;
  }
}

$("open").addEventListener("click", async () => {
  name = $("name").value.trim();
  try {
    notice("");
    await refresh();
  } catch (err) {
    notice(err.message);
  }
});

$("record").addEventListener("click", async () => {
  if (recorder) {
    recorder.stop();
    return;
  }
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({
      audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false },
    });
  } catch (err) {
    notice(`No microphone: ${err.message}. Open this page over HTTPS and allow the microphone.`);
    return;
  }
  const parts = [];
  recorder = new MediaRecorder(stream);
  recorder.ondataavailable = (e) => parts.push(e.data);
  recorder.onstop = () => {
    stream.getTracks().forEach((t) => t.stop());
    $("record").textContent = "Record";
    recorder = null;
    send(new Blob(parts, { type: parts[0]?.type || "audio/webm" }));
  };
  recorder.start();
  $("record").textContent = "Stop";
});

$("skip").addEventListener("click", () => {
  index = (index + 1) % status.prompts.length;
  show();
});

$("upload").addEventListener("change", (e) => e.target.files[0] && send(e.target.files[0]));

$("train").addEventListener("click", async () => {
  try {
    const job = await api("POST", `/api/voices/${encodeURIComponent(name)}/training`);
    $("training").textContent = `Training: ${job.status}. Follow it with hearth voices status ${name}.`;
  } catch (err) {
    $("training").textContent = `Cannot train yet: ${err.message}`;
  }
});

$("save-key").addEventListener("click", () => {
  window.localStorage.setItem("hearth-api-key", $("key").value);
  $("key-row").hidden = true;
});

if (params.get("name")) {
  $("name").value = params.get("name");
  $("open").click();
}
