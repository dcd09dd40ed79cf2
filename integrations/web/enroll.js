// Enrollment page: one person's recordings make a custom voice (prompts read aloud, each
// take checked), enroll the person as a speaker Hearth knows by voice, or both at once.
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(window.location.search);
const key = () => params.get("key") || window.localStorage.getItem("hearth-api-key") || "";
const enc = encodeURIComponent;
// Read when only a speaker is enrolled (a voice's prompts come from its enrollment).
const SPEAKER_PROMPTS = [
  "Turn on the kitchen lights.",
  "What is the weather going to be like this weekend?",
  "Please remind me to water the plants on Sunday.",
  "Set a timer for ten minutes and tell me when it is done.",
  "Play some quiet music in the living room.",
];
const MAX_RECORDINGS = 20; // speakers.max_takes by default; the server has the last word
let who = ""; // the person: the speaker's name
let voice = ""; // the custom voice's name ("" when no voice is made)
let asSpeaker = false;
let status = null; // the voice enrollment's progress
let prompts = [];
let index = 0;
let recorder = null;
const kept = []; // speaker only: the recordings, uploaded when the person is enrolled

async function api(method, path, body) {
  const headers = key() ? { authorization: `Bearer ${key()}` } : {};
  if (typeof body === "string") headers["content-type"] = "application/json";
  const resp = await fetch(path, { method, headers, body });
  const data = resp.status === 204 ? {} : await resp.json();
  if (!resp.ok) {
    if (data.code === "unauthorized") $("key-row").hidden = false;
    // detail: the whole message (error is WIS's short text for bad audio)
    const err = new Error(data.detail || data.error || resp.statusText);
    err.code = data.code;
    throw err;
  }
  return data;
}

function notice(text) {
  $("notice").textContent = text;
  $("notice").hidden = !text;
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

// A voice name (letters, digits, dots, dashes) from a person's name: "Zoë Ann" -> "zoe-ann".
function voiceNameOf(person) {
  return person
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9_.-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "")
    .replace(/-+$/, "")
    .slice(0, 64);
}

function show() {
  $("session").hidden = false;
  $("voice-part").hidden = !voice;
  $("voice-progress").hidden = !voice;
  $("speaker-part").hidden = !asSpeaker;
  if (voice) {
    $("progress").value = status.progress;
    $("minutes").textContent =
      `${(status.seconds / 60).toFixed(1)} of ${status.target_seconds / 60} minutes, ` +
      plural(status.takes, "take");
  }
  $("prompt").textContent = `${index}. ${prompts[index]}`;
  if (asSpeaker) {
    const count = voice ? status.takes : kept.length;
    $("recordings").textContent =
      `${plural(count, "recording")} to know ${who} by` +
      (count < 3 ? " (three or more recognize you better)." : ".");
    $("enroll-speaker").disabled = count === 0;
  }
}

async function refresh() {
  if (voice) {
    status = await api("GET", `/api/voices/${enc(voice)}/enrollment`);
    prompts = status.prompts.map((p) => p.text);
    index = status.next_prompt ?? 0;
  } else {
    prompts = SPEAKER_PROMPTS;
    index = 0;
  }
  show();
}

async function send(blob) {
  if (!voice) {
    if (kept.length >= MAX_RECORDINGS) {
      $("result").textContent = `${MAX_RECORDINGS} recordings are enough: enroll now.`;
      return;
    }
    kept.push(blob);
    $("result").textContent = `Recorded (${plural(kept.length, "recording")}).`;
    index = (index + 1) % prompts.length;
    show();
    return;
  }
  $("result").textContent = "Checking…";
  try {
    const out = await api("PUT", `/api/voices/${enc(voice)}/enrollment/takes/${index}`, blob);
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
  who = $("who").value.trim();
  asSpeaker = $("make-speaker").checked;
  voice = $("make-voice").checked ? $("name").value.trim() || voiceNameOf(who) : "";
  kept.length = 0;
  if (!voice && !asSpeaker) {
    notice("Choose what to make: a voice, a speaker, or both.");
  } else if (asSpeaker && !who) {
    notice("Say who this is: the speaker's name.");
  } else if ($("make-voice").checked && !voice) {
    notice("Give the voice a name: letters, digits, dots or dashes.");
  } else {
    try {
      notice("");
      await refresh();
    } catch (err) {
      notice(err.message);
    }
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
  index = (index + 1) % prompts.length;
  show();
});

$("upload").addEventListener("change", (e) => e.target.files[0] && send(e.target.files[0]));

$("train").addEventListener("click", async () => {
  try {
    const job = await api("POST", `/api/voices/${enc(voice)}/training`);
    $("training").textContent = `Training: ${job.status}. Follow it with hearth voices status ${voice}.`;
  } catch (err) {
    $("training").textContent = `Cannot train yet: ${err.message}`;
  }
});

// With a voice, the speaker comes from the voice's accepted takes (earlier ones too);
// without, from the recordings made on this page.
$("enroll-speaker").addEventListener("click", async () => {
  $("speaker-result").textContent = "Enrolling…";
  try {
    let body;
    let path = `/api/speakers/${enc(who)}`;
    if (voice) {
      path += `/from-voice/${enc(voice)}`;
    } else {
      body = new FormData();
      kept.forEach((blob, i) => body.append("files", blob, `recording-${i + 1}`));
    }
    const out = await api("POST", path, body);
    $("speaker-result").textContent =
      `Hearth knows ${out.name} by voice now (from ${plural(out.takes, "recording")}).`;
    await listSpeakers();
  } catch (err) {
    $("speaker-result").textContent = `Not enrolled: ${err.message}`;
  }
});

function button(text, onclick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.addEventListener("click", onclick);
  return b;
}

function speakerRow(speaker) {
  const li = document.createElement("li");
  li.dataset.name = speaker.name;
  const label = document.createElement("span");
  const when = new Date(speaker.enrolled_at * 1000).toLocaleDateString();
  label.textContent = `${speaker.name} (${plural(speaker.takes, "recording")}, ${when}) `;
  const act = async (method, body) => {
    try {
      await api(method, `/api/speakers/${enc(speaker.name)}`, body);
      await listSpeakers();
    } catch (err) {
      $("speakers-note").textContent = err.message;
    }
  };
  const rename = button("Rename", () => {
    const input = document.createElement("input");
    input.value = speaker.name;
    input.maxLength = 64;
    input.className = "new-name";
    const save = () => act("PATCH", JSON.stringify({ new_name: input.value.trim() }));
    input.addEventListener("keydown", (e) => e.key === "Enter" && save());
    li.replaceChildren(input, button("Save", save), button("Cancel", listSpeakers));
    input.focus();
  });
  rename.className = "rename";
  // Two clicks: removing deletes the voiceprint, and takes new recordings to undo.
  const remove = button("Remove", () => {
    if (remove.dataset.armed) act("DELETE");
    else {
      remove.dataset.armed = "1";
      remove.textContent = "Really remove?";
    }
  });
  remove.className = "remove";
  li.append(label, rename, remove);
  return li;
}

async function listSpeakers() {
  let data;
  try {
    data = await api("GET", "/api/speakers");
  } catch (err) {
    $("speakers-note").textContent = err.message;
    if (err.code === "speakers-off") {
      $("make-speaker").checked = false;
      $("make-speaker").disabled = true;
    }
    return;
  }
  $("speakers").replaceChildren(...data.speakers.map(speakerRow));
  $("speakers-note").textContent = data.speakers.length ? "" : "Nobody is enrolled yet.";
}

$("save-key").addEventListener("click", () => {
  window.localStorage.setItem("hearth-api-key", $("key").value);
  $("key-row").hidden = true;
  listSpeakers();
});

// ?name=VOICE makes a voice, ?speaker=PERSON enrolls a speaker; both: both at once.
if (params.get("name") || params.get("speaker")) {
  $("who").value = params.get("speaker") || params.get("name");
  $("name").value = params.get("name") || "";
  $("make-voice").checked = Boolean(params.get("name"));
  $("make-speaker").checked = Boolean(params.get("speaker"));
  $("open").click();
}
listSpeakers();
