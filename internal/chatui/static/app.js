// The chat page of the Tasks API (/ui). Only the API's public routes, with
// the key the person enters (sessionStorage, this tab only):
//   GET  /v1/tasks                        the tasks to pick from
//   POST /v1/tasks/{name}/run  stream     the first message, answered as server-sent events
//   POST /v1/runs/{id}/inputs             every later message
//   GET  /v1/runs/{id}/events?events=all  everything the run does as it happens (Last-Event-ID)
//   GET  /v1/runs/{id}, /messages         the run's state and its conversation
//   GET  /v1/runs/{id}/approvals          pending capability calls
//   POST /v1/runs/{id}/approvals/{a}      a decision
//
// The conversation follows seed 000. GET /messages lists the committed
// entries in commit order, then the inputs not yet committed. Committed
// entries keep their place for ever, so the page pages with the API's
// cursor (?after=) over committed entries only: after = how many it holds.
// The uncommitted tail moves (an answer committed while an input waits is
// listed in front of it), so it is read again, whole, on every poll and
// shown as queued, never as an entry of the conversation. Which inputs an
// answer answers is found by committed_at (those committed after the
// previous answer and no later than it), never by counting or position.
"use strict";

const KEY = "agenttask.chat.key";
const POLL_MS = 1500;

const $ = (id) => document.getElementById(id);
const state = {
  key: sessionStorage.getItem(KEY) || "",
  tasks: [],
  task: null,       // the picked task (for a new run)
  run: "",          // the open run's ID
  taskOfRun: "",    // its task's name
  committed: [],    // committed entries, in commit order; its length is the cursor
  tail: [],         // the inputs not yet committed, as last read (re-read every poll)
  keys: new Map(),  // identity (type, committed_at, received_at) -> how many held
  sinceAnswer: [],  // inputs committed since the last answer held
  lastAnswerAt: "", // committed_at of the last answer held
  lastEventID: "",  // the last id: of the run's stream
  attempt: 1,       // the answer number shown in the streaming entry
  events: null,     // AbortController of the open /events connection
  poll: 0,
  pending: [],      // sent, not yet listed by the API: {text, received_at}
  decided: new Set(),
  closed: false,
  opened: 0,        // counts runs opened: a reply for an earlier one is dropped
};

// ---- HTTP ---------------------------------------------------------------

class Problem extends Error {
  constructor(status, p) {
    super((p && (p.detail || p.title)) || ("HTTP " + status));
    this.status = status;
    this.code = (p && p.code) || "";
  }
}

async function problemOf(resp) {
  let p = null;
  try { p = await resp.json(); } catch (e) { /* not JSON */ }
  return new Problem(resp.status, p);
}

function headers(extra) {
  const h = Object.assign({ "Authorization": "Bearer " + state.key }, extra || {});
  return h;
}

async function api(method, path, body) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const resp = await fetch(path, init);
  if (!resp.ok) throw await problemOf(resp);
  if (resp.status === 204) return null;
  const j = await resp.json();
  return j.data;
}

function showError(err) {
  if (!err) { $("error").textContent = ""; return; }
  const code = err.code ? err.code + ": " : "";
  $("error").textContent = code + err.message;
}

// ---- Server-sent events over fetch (EventSource cannot send a key) -------

// readEvents reads resp's text/event-stream and calls onEvent(id, data) for
// each event; it resolves when the stream ends.
async function readEvents(resp, onEvent) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let id = "", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("id:")) id = line.slice(3).trim();
        else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
      }
      if (!data) continue; // a keep-alive comment
      let ev;
      try { ev = JSON.parse(data); } catch (e) { continue; }
      onEvent(id, ev);
    }
  }
}

// onStreamEvent shows one event of the run's full event stream
// (events=all, docs/streaming.md#every-event): the answer's text as it is
// written, what the task does meanwhile (tool calls and their results,
// sub-tasks, approvals, budget waits), and the turn's end.
function onStreamEvent(id, ev) {
  if (id) state.lastEventID = id;
  const box = $("streaming"), out = $("stream-text");
  if (ev.path) { // a sub-task's: one line for its start
    if (ev.type === "subtask.started") activity("sub-" + ev.path, "running", "sub-task " + ev.path + " started");
    else if (ev.type === "done") activity("sub-" + ev.path, "finished", "sub-task " + ev.path + " answered");
    return;
  }
  switch (ev.type) {
    case "text": {
      if (ev.wrapped) return; // the model's text inside a JSON reply: the entry shows the reply
      const answer = ev.answer || ev.attempt || 1; // events=all numbers answers; the seed's stream marks a new one from 2 on
      if (answer !== state.attempt) out.textContent = ""; // another answer begins
      state.attempt = answer;
      out.textContent += ev.text;
      box.hidden = false;
      return;
    }
    case "tool_call.started":
      activity(ev.callId, "running", "calling " + ev.name + " " + (ev.arguments ? JSON.stringify(ev.arguments) : ""));
      return;
    case "tool_call.finished":
      activity(ev.callId, ev.error ? "failed" : "finished", ev.name + " → " + ev.result + (ev.truncated ? "…" : ""));
      return;
    case "attempt.retracted":
      if ((ev.answer || 1) === state.attempt) out.textContent = ""; // the cut answer's text
      for (const li of $("activity-list").querySelectorAll("li.running")) li.classList.add("withdrawn");
      return;
    case "approval.requested":
      activity("approval-" + ev.approval.id, "waiting", ev.approval.capability + " waits for your decision");
      refresh(); // lists it with its buttons
      return;
    case "approval.decided": {
      const d = ev.approval.decision || {};
      activity("approval-" + ev.approval.id, d.approve ? "finished" : "failed",
        ev.approval.capability + (d.approve ? " approved" : " denied") + (d.reason ? ": " + d.reason : ""));
      return;
    }
    case "budget.waiting":
      activity("budget", "waiting", "waiting for a budget raise");
      return;
    case "budget.raised":
      activity("budget", "finished", "budget raised");
      return;
    case "done":
    case "error":
      out.textContent = "";
      box.hidden = true;
      state.attempt = 1;
      if (ev.type === "error") showError(new Problem(ev.status, ev));
      refresh();
  }
}

// activity shows (or updates) one line of what the task is doing.
function activity(key, cls, text) {
  const list = $("activity-list");
  let li = list.querySelector('li[data-key="' + CSS.escape(key) + '"]');
  if (!li) {
    li = document.createElement("li");
    li.dataset.key = key;
    list.append(li);
  }
  li.className = cls;
  li.textContent = text;
  $("activity").hidden = false;
}

// follow keeps GET /v1/runs/{id}/events open from the last event seen,
// again after a cut, until the run ends or another run is opened.
async function follow(run) {
  if (state.events) state.events.abort();
  const ctl = new AbortController();
  state.events = ctl;
  while (state.run === run && !ctl.signal.aborted && !state.closed) {
    try {
      const h = headers();
      if (state.lastEventID) h["Last-Event-ID"] = state.lastEventID;
      const resp = await fetch("/v1/runs/" + run + "/events?events=all", { headers: h, signal: ctl.signal });
      if (!resp.ok) {
        const p = await problemOf(resp);
        // No broker: the page reads the conversation without a stream.
        if (resp.status === 400 || resp.status === 404) return;
        throw p;
      }
      await readEvents(resp, onStreamEvent);
    } catch (e) {
      if (ctl.signal.aborted) return;
    }
    await sleep(2000);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- The key and the tasks ----------------------------------------------

async function useKey(key) {
  state.key = key;
  sessionStorage.setItem(KEY, key);
  $("key").value = "";
  $("key-status").className = "";
  $("key-status").textContent = "Checking the key…";
  try {
    state.tasks = await api("GET", "/v1/tasks");
    $("key-status").className = "ok";
    $("key-status").textContent = "Key in use (this tab only). " + state.tasks.length + " task(s).";
    fillTasks();
    showError(null);
  } catch (e) {
    $("key-status").textContent = "The key was refused: " + (e.code ? e.code + ": " : "") + e.message;
  }
}

function forgetKey() {
  sessionStorage.removeItem(KEY);
  state.key = "";
  $("key-status").className = "";
  $("key-status").textContent = "No key. Enter one to talk to a task.";
  $("task").disabled = true;
  closeRun();
}

function fillTasks() {
  const sel = $("task");
  sel.textContent = "";
  sel.append(new Option("(pick a task)", ""));
  for (const t of state.tasks) {
    const o = new Option(t.name + (t.description ? " — " + t.description : ""), t.name);
    if (t.enabled === false) { o.disabled = true; o.text += " (disabled)"; }
    sel.append(o);
  }
  sel.disabled = false;
  if (state.task) sel.value = state.task.name;
}

function pickTask(name) {
  closeRun();
  state.task = state.tasks.find((t) => t.name === name) || null;
  const vars = $("vars");
  vars.textContent = "";
  $("task-about").textContent = "";
  if (!state.task) return;
  const t = state.task;
  $("task-about").textContent = "Model " + t.model + (t.input && t.input.maxBytes > 0
    ? " · messages up to " + t.input.maxBytes + " bytes"
    : " · takes no input: Send runs it once");
  for (const [name, v] of Object.entries(t.variables || {})) {
    if (!v || v.maxBytes === undefined) continue; // a fixed value
    const id = "var-" + name;
    const l = document.createElement("label");
    l.htmlFor = id;
    l.textContent = name + " (up to " + v.maxBytes + " bytes)";
    const i = document.createElement("input");
    i.id = id;
    i.dataset.variable = name;
    i.maxLength = v.maxBytes;
    vars.append(l, i);
  }
  enableComposer(true);
}

// ---- A run ----------------------------------------------------------------

function closeRun() {
  if (state.events) state.events.abort();
  clearInterval(state.poll);
  state.opened++;
  Object.assign(state, { run: "", taskOfRun: "", committed: [], tail: [], keys: new Map(), sinceAnswer: [], lastAnswerAt: "",
    lastEventID: "", attempt: 1, events: null, poll: 0, pending: [], closed: false });
  state.decided.clear();
  $("messages").textContent = "";
  $("pending").textContent = "";
  $("stream-text").textContent = "";
  $("streaming").hidden = true;
  $("approval-list").textContent = "";
  $("approvals").hidden = true;
  $("activity-list").textContent = "";
  $("activity").hidden = true;
  $("run-label").textContent = "";
  $("run-state").textContent = "";
  enableComposer(!!state.task);
}

function enableComposer(on) {
  $("message").disabled = !on;
  $("send").disabled = !on;
}

function openRun(id) {
  const task = state.task;
  closeRun();
  state.task = task;
  state.run = id;
  $("run-label").textContent = id;
  $("run-id").value = id;
  enableComposer(true);
  refresh();
  state.poll = setInterval(refresh, POLL_MS);
}

// refresh reads the run's state, new entries and approvals. A refresh
// asked for while one runs (an answer's done event) runs after it.
let refreshing = false, again = false;
async function refresh() {
  const run = state.run, opened = state.opened;
  if (!run) return;
  if (refreshing) { again = true; return; }
  refreshing = true;
  try {
    const [st, msgs, approvals] = await Promise.all([
      api("GET", "/v1/runs/" + run),
      readMessages(run),
      api("GET", "/v1/runs/" + run + "/approvals"),
    ]);
    if (state.opened !== opened) return;
    showState(st);
    for (const m of msgs.committed) addMessage(m);
    state.tail = msgs.tail;
    showPending();
    showApprovals(approvals);
  } catch (e) {
    if (state.opened === opened) showError(e);
  } finally {
    refreshing = false;
    if (again) { again = false; refresh(); }
  }
}

// A poll reads at most this many pages (a long conversation opened anew
// is read over several polls).
const MAX_PAGES = 20;

// readMessages reads the committed entries after those held, with the
// API's cursor (after = the number held: committed entries never move),
// then the uncommitted tail whole. A page ends short at the API's byte
// bound, so pages are read until an empty one. Should a committed entry
// follow the tail read so far (a turn committed between two pages), the
// tail is dropped and read again from the first entry not known committed.
async function readMessages(run) {
  const committed = [];
  let tail = [];
  for (let pages = 0; pages < MAX_PAGES; pages++) {
    const after = state.committed.length + committed.length + tail.length;
    const page = await api("GET", "/v1/runs/" + run + "/messages?after=" + after);
    if (!page || page.length === 0) break;
    for (const m of page) {
      if (!m.committed_at) { tail.push(m); continue; }
      if (tail.length) { tail = []; break; } // the list moved: read again from here
      committed.push(m);
    }
  }
  return { committed, tail };
}

function showState(st) {
  const words = { waiting: "waiting for your message", working: "writing an answer", shaping: "shaping the answer", awaiting_approval: "waiting for your decision", awaiting_budget: "waiting for a budget raise" };
  let s = "State: " + st.state + (words[st.state] ? " (" + words[st.state] + ")" : "");
  if (st.error) s += " · " + (st.error.type || "") + " " + (st.error.message || "");
  $("run-state").textContent = s;
  const ended = ["completed", "failed", "canceled"].includes(st.state);
  if (ended) {
    state.closed = true;
    enableComposer(false);
    if (state.events) state.events.abort();
  }
}

// ---- Entries --------------------------------------------------------------

function fmt(ts) {
  const d = new Date(ts);
  return isNaN(d) ? ts : d.toLocaleString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", day: "numeric", month: "short" });
}

function timeEl(label, ts) {
  const t = document.createElement("time");
  t.dateTime = ts;
  t.className = label;
  t.title = label + " " + ts;
  t.textContent = label.replace("_", " ") + " " + fmt(ts);
  return t;
}

function partsOf(parts, into) {
  const files = document.createElement("ul");
  files.className = "files";
  let text = "";
  for (const p of parts || []) {
    if (typeof p.text === "string") { text += p.text; continue; }
    if (!p.file) continue;
    const li = document.createElement("li");
    li.className = "file";
    const size = p.sizeBytes !== undefined ? " · " + p.sizeBytes + " bytes" : "";
    const url = /^(https?:|data:image\/)/.test(p.file) ? p.file : "";
    if (url && p.mimeType && p.mimeType.startsWith("image/")) {
      const img = document.createElement("img");
      img.src = url;
      img.alt = "image " + p.file;
      li.append(img);
    } else if (url) {
      const a = document.createElement("a");
      a.href = url;
      a.textContent = p.file;
      a.rel = "noopener noreferrer";
      li.append(a);
    } else {
      // A reference into the run's mount (task://...): the Tasks API
      // serves no file downloads, so it is named, not linked.
      const code = document.createElement("code");
      code.textContent = p.file;
      li.append("📎 ", code);
      li.title = "a file in the run's storage; the Tasks API does not serve its content";
    }
    li.append(" (" + (p.mimeType || "file") + size + ")");
    files.append(li);
  }
  const t = document.createElement("div");
  t.className = "text";
  t.textContent = text;
  into.append(t);
  if (files.childElementCount) into.append(files);
}

// identity is an entry's stable name: its type and instants, and how many
// entries with the same ones are held before it (inputs delivered and
// committed together share both instants). Never its index.
function identity(m) {
  const base = [m.type, m.committed_at || "", m.received_at || ""].join("|");
  const n = state.keys.get(base) || 0;
  state.keys.set(base, n + 1);
  return base + "|" + n;
}

// instant orders two UTC RFC 3339 instants (any number of fraction digits).
function instant(ts) {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(ts || "");
  return m ? m[1] + "." + (m[2] || "").padEnd(9, "0") : (ts || "");
}

// answered is what an answer committed at ts answers (seed 000): every
// input committed after the previous answer and no later than ts.
function answered(ts) {
  const after = instant(state.lastAnswerAt), upTo = instant(ts);
  const out = state.sinceAnswer.filter((i) => instant(i.committed_at) > after && instant(i.committed_at) <= upTo);
  state.sinceAnswer = state.sinceAnswer.filter((i) => instant(i.committed_at) > upTo);
  state.lastAnswerAt = ts;
  return out;
}

function snippet(m) {
  const t = (m.message || []).map((p) => (typeof p.text === "string" ? p.text : p.file ? "📎 " + p.file : "")).join("").trim();
  return t.length > 40 ? t.slice(0, 39) + "…" : t;
}

function addMessage(m) {
  state.committed.push(m);
  const n = state.committed.length;
  const li = document.createElement("li");
  const art = document.createElement("article");
  art.className = "entry " + m.type;
  art.dataset.key = identity(m);
  const who = m.type === "input" ? "You" : "Assistant";
  const titles = [];
  if (m.received_at) titles.push("received_at " + m.received_at);
  if (m.committed_at) titles.push("committed_at " + m.committed_at);
  art.title = titles.join("\n");
  const h = document.createElement("header");
  h.className = "who";
  h.textContent = who;
  art.append(h);
  partsOf(m.message, art);
  const meta = document.createElement("footer");
  meta.className = "meta";
  if (m.received_at) meta.append(timeEl("received_at", m.received_at));
  if (m.received_at && m.committed_at) meta.append(" · ");
  if (m.committed_at) meta.append(timeEl("committed_at", m.committed_at));
  if (m.type === "input") state.sinceAnswer.push(m);
  else {
    const inputs = answered(m.committed_at);
    art.dataset.answers = inputs.map((i) => i.received_at).join(" ");
    if (inputs.length) {
      const a = document.createElement("span");
      a.className = "answers";
      a.textContent = " · answers " + inputs.map((i) => "“" + snippet(i) + "”").join(", ");
      a.title = "in answer to the input(s) received at " + inputs.map((i) => i.received_at).join(", ");
      meta.append(a);
    }
  }
  art.append(meta);
  art.setAttribute("aria-label", who + ", entry " + n + (titles.length ? ", " + titles.join(", ") : ""));
  li.append(art);
  $("messages").append(li);
}

// showPending lists the inputs not yet committed: the API's tail (read
// again every poll), then what this page sent that the API does not list
// yet (sending, or sent since the last poll), matched by received_at and
// text.
function showPending() {
  const listed = new Map();
  for (const m of state.committed.concat(state.tail)) {
    if (m.type !== "input" || !m.received_at) continue;
    const k = m.received_at + "\n" + snippet(m);
    listed.set(k, (listed.get(k) || 0) + 1);
  }
  const anyInput = state.tail.length > 0 || state.committed.some((m) => m.type === "input");
  state.pending = state.pending.filter((p) => {
    if (p.first) return !anyInput;
    if (!p.received_at) return true;
    const k = p.received_at + "\n" + snippet({ message: [{ text: p.text }] });
    const n = listed.get(k) || 0;
    if (n > 0) { listed.set(k, n - 1); return false; }
    return true;
  });
  const box = $("pending");
  box.textContent = "";
  for (const m of state.tail) box.append(queuedEl("", m.received_at, m));
  for (const p of state.pending) box.append(queuedEl(p.text, p.received_at, null));
}

// queuedEl shows an input not yet committed: the API's entry m (received,
// its receipt known), or what this page is still sending (m null).
function queuedEl(text, receivedAt, m) {
  const art = document.createElement("article");
  art.className = "entry input queued";
  const h = document.createElement("header");
  h.className = "who";
  h.append("You ");
  const b = document.createElement("span");
  b.className = "badge";
  b.textContent = receivedAt ? "queued" : "sending…";
  h.append(b);
  art.append(h);
  if (m) partsOf(m.message, art);
  else {
    const t = document.createElement("div");
    t.className = "text";
    t.textContent = text;
    art.append(t);
  }
  if (receivedAt) {
    art.dataset.key = "input||" + receivedAt;
    art.title = "received_at " + receivedAt + "\nnot committed yet";
    const meta = document.createElement("footer");
    meta.className = "meta";
    meta.append(timeEl("received_at", receivedAt), " · not committed yet");
    art.append(meta);
  }
  return art;
}

// ---- Approvals ------------------------------------------------------------

function showApprovals(list) {
  const pending = (list || []).filter((a) => !a.decision && !state.decided.has(a.id));
  const ul = $("approval-list");
  const shown = Array.from(ul.children).map((li) => li.dataset.id).join(",");
  if (shown === pending.map((a) => a.id).join(",")) return; // keep what the person is typing
  ul.textContent = "";
  $("approvals").hidden = pending.length === 0;
  for (const a of pending) {
    const li = document.createElement("li");
    li.className = "approval";
    li.dataset.id = a.id;
    const title = document.createElement("div");
    title.append("The assistant wants to call ");
    const c = document.createElement("strong");
    c.textContent = a.capability;
    title.append(c, " (turn " + a.turn + ", asked ");
    title.append(timeEl("requested_at", a.requested_at), ")");
    const args = document.createElement("pre");
    args.textContent = JSON.stringify(a.arguments, null, 2);
    const rid = "reason-" + a.id.replace(/[^A-Za-z0-9_-]/g, "_");
    const l = document.createElement("label");
    l.htmlFor = rid;
    l.textContent = "Reason (optional; the model reads it when you deny)";
    const reason = document.createElement("input");
    reason.id = rid;
    reason.maxLength = 2000;
    const row = document.createElement("div");
    row.className = "row";
    const yes = document.createElement("button");
    yes.type = "button";
    yes.className = "approve";
    yes.textContent = "Approve";
    const no = document.createElement("button");
    no.type = "button";
    no.className = "deny";
    no.textContent = "Deny";
    yes.setAttribute("aria-label", "Approve " + a.capability + " " + a.id);
    no.setAttribute("aria-label", "Deny " + a.capability + " " + a.id);
    yes.onclick = () => decide(a, true, reason.value, li);
    no.onclick = () => decide(a, false, reason.value, li);
    if (a.client) {
      // A client capability's call: the person answers with its result.
      title.firstChild.textContent = "The assistant asks your application to run ";
      l.textContent = "Result (the model reads it as the call's result)";
      reason.maxLength = 65536;
      yes.textContent = "Send result";
      yes.setAttribute("aria-label", "Send the result of " + a.capability + " " + a.id);
      yes.onclick = () => decide(a, true, "", li, reason.value);
      no.onclick = () => decide(a, false, "", li);
    }
    row.append(reason, yes, no);
    li.append(title, args, l, row);
    ul.append(li);
  }
}

async function decide(a, approve, reason, li, result) {
  for (const b of li.querySelectorAll("button")) b.disabled = true;
  try {
    const body = { approve };
    if (reason) body.reason = reason;
    if (result !== undefined) body.result = result;
    await api("POST", "/v1/runs/" + state.run + "/approvals/" + encodeURIComponent(a.id), body);
    state.decided.add(a.id);
    li.remove();
    if (!$("approval-list").childElementCount) $("approvals").hidden = true;
    showError(null);
    refresh();
  } catch (e) {
    showError(e);
    for (const b of li.querySelectorAll("button")) b.disabled = false;
  }
}

// ---- Sending --------------------------------------------------------------

async function send(text) {
  showError(null);
  if (!state.run) return start(text);
  const sent = { text };
  state.pending.push(sent);
  showPending();
  try {
    const r = await api("POST", "/v1/runs/" + state.run + "/inputs", { message: [{ mimeType: "text/plain", text }] });
    sent.received_at = r.received_at;
    showPending();
    refresh();
  } catch (e) {
    state.pending = state.pending.filter((p) => p !== sent);
    showPending();
    showError(e);
    throw e;
  }
}

// start runs the picked task with the first message, streamed.
async function start(text) {
  const t = state.task;
  if (!t) throw new Problem(0, { detail: "pick a task, or open a run, first" });
  const body = { stream: true };
  const vars = {};
  for (const i of $("vars").querySelectorAll("input[data-variable]")) vars[i.dataset.variable] = i.value;
  if (Object.keys(vars).length) body.variables = vars;
  if (t.input && t.input.maxBytes > 0) body.input = text;
  const sent = { text: text || "(run)", first: true };
  state.pending = [sent];
  showPending();
  const resp = await fetch("/v1/tasks/" + encodeURIComponent(t.name) + "/run", {
    method: "POST", headers: headers({ "Content-Type": "application/json" }), body: JSON.stringify(body),
  });
  if (!resp.ok) {
    state.pending = [];
    showPending();
    const p = await problemOf(resp);
    showError(p);
    throw p;
  }
  const id = resp.headers.get("X-Request-Id");
  openRun(id);
  state.pending = [sent];
  state.taskOfRun = t.name;
  showPending();
  if ((resp.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
    await readEvents(resp, onStreamEvent);
  } else {
    await resp.json().catch(() => null);
  }
  refresh();
  follow(id); // later turns
}

// ---- Wiring -----------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  $("key-form").addEventListener("submit", (e) => { e.preventDefault(); if ($("key").value) useKey($("key").value.trim()); });
  $("forget-key").addEventListener("click", forgetKey);
  $("task").addEventListener("change", (e) => pickTask(e.target.value));
  $("task-form").addEventListener("submit", (e) => e.preventDefault());
  $("run-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const id = $("run-id").value.trim();
    if (!state.key) { showError(new Problem(0, { detail: "enter a key first" })); return; }
    if (!/^run-[a-z2-7]{26}$/.test(id)) { showError(new Problem(0, { detail: "a run ID is run- and 26 letters a-z or digits 2-7 (X-Request-Id of its answer)" })); return; }
    state.task = null;
    $("task").value = "";
    openRun(id);
    follow(id);
  });
  $("composer").addEventListener("submit", async (e) => {
    e.preventDefault();
    const box = $("message");
    const text = box.value;
    if (!text.trim() && !(state.task && !state.run && state.task.input && state.task.input.maxBytes === 0)) return;
    box.value = "";
    $("send").disabled = true;
    try { await send(text); } catch (err) { box.value = box.value || text; } finally { $("send").disabled = state.closed; }
  });
  $("new-chat").addEventListener("click", () => { closeRun(); $("run-id").value = ""; });
  if (state.key) useKey(state.key);
  else $("key-status").textContent = "No key. Enter one to talk to a task.";
});
