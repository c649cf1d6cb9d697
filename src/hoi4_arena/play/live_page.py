"""The live view's page (play/live.py serves it at /): a canvas for the frames, the ARENA state, the
policy's tokens and telemetry, fed by one websocket (/ws) that only ever sends to the page.

The page writes what it has seen into the DOM (`#day`, `#frames`) and the title ("day D, frame F"), so
a headless browser can check that frames arrive and the day advances without reading pixels.
"""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>hoi4-arena live</title>
<style>
  body { font: 14px system-ui, sans-serif; margin: 0; background: #1c1f24; color: #e4e4e4; }
  header { padding: 6px 12px; background: #2b2f36; display: flex; gap: 18px; align-items: baseline; }
  header b { font-size: 16px; }
  main { display: flex; gap: 12px; padding: 12px; align-items: flex-start; }
  canvas { background: #000; width: 62vw; max-width: 1280px; height: auto; border: 1px solid #444; }
  section { min-width: 280px; }
  h2 { font-size: 14px; margin: 10px 0 4px; color: #9cc3ff; }
  table { border-collapse: collapse; }
  td { padding: 1px 8px 1px 0; vertical-align: top; }
  .BLU { color: #6ea8ff; } .RED { color: #ff7a6e; }
  #tokens { font-family: monospace; font-size: 12px; white-space: pre; }
  #status.down { color: #ff7a6e; }
</style>
</head>
<body>
<header>
  <b>hoi4-arena live</b>
  <span id="source"></span>
  <span>day <span id="day">-</span> (<span id="date">-</span>)</span>
  <span>frame <span id="frames">0</span></span>
  <span id="status">connecting</span>
</header>
<main>
  <canvas id="screen" width="320" height="180"></canvas>
  <section>
    <h2>ARENA</h2>
    <table id="arena"></table>
    <h2>Setup milestones (day reached)</h2>
    <table id="milestones"></table>
    <h2>Policy tokens</h2>
    <div id="tokens">-</div>
    <h2>Telemetry</h2>
    <table id="telemetry"></table>
  </section>
</main>
<script>
"use strict";
const canvas = document.getElementById("screen");
const context = canvas.getContext("2d");
let frames = 0, day = "-";

function text(id, value) { document.getElementById(id).textContent = value; }
function rows(id, pairs) {
  const table = document.getElementById(id);
  table.replaceChildren(...pairs.map(([key, value, cls]) => {
    const row = document.createElement("tr");
    const a = document.createElement("td"), b = document.createElement("td");
    a.textContent = key; b.textContent = value;
    if (cls) { a.className = cls; }
    row.append(a, b);
    return row;
  }));
}
function number(value, unit, digits) {
  return value === null || value === undefined ? "-" : value.toFixed(digits ?? 1) + (unit || "");
}
function title() { document.title = "day " + day + ", frame " + frames; }

function showState(state) {
  text("source", state.source || "");
  const arena = state.arena || {};
  day = arena.day === null || arena.day === undefined ? "-" : String(arena.day);
  text("day", day);
  text("date", arena.date || "-");
  const pairs = [["map", (arena.arena || "-") + " seed " + (arena.seed ?? "-")],
                 ["war", arena.attacker ? arena.attacker + " attacked" : "not yet"]];
  for (const [tag, side] of Object.entries(arena.sides || {})) {
    pairs.push([tag, side.player + ": " + side.provinces + " provinces, " + side.divisions +
                " divisions, surrender " + number(side.surrender * 100, " %", 0), tag]);
  }
  if (arena.winner) { pairs.push(["winner", arena.winner, arena.winner]); }
  if (arena.draw) { pairs.push(["draw", arena.draw]); }
  if (state.game_result) { pairs.push(["game", state.game_result]); }
  rows("arena", pairs);
  const milestones = [];
  for (const [tag, steps] of Object.entries(arena.milestones || {})) {
    const done = ["army", "front", "offensive", "executed"].map(s => s + " " + (steps[s] ?? "-"));
    milestones.push([tag, done.join(", "), tag]);
  }
  rows("milestones", milestones);
  const tokens = state.tokens;
  text("tokens", tokens ? "decision " + tokens.decision + " (" + tokens.side + ")\\n" +
                          tokens.names.join("\\n") : "no policy plays");
  const t = state.telemetry;
  if (t) {
    const host = t.host || {}, worker = t.worker || {}, game = t.game;
    const tele = [["host CPU", number(host.cpu_percent, " %") + " of " + host.cpu_count + " cores"],
                  ["host memory", number(host.memory?.used_mb, "", 0) + " / " +
                                  number(host.memory?.total_mb, " MB", 0)],
                  ["worker", number(worker.cpu_percent, " % CPU") + ", " + number(worker.rss_mb, " MB", 0)]];
    if (game) { tele.push(["game", game.in_process ? "in the worker's process" :
                           number(game.cpu_percent, " % CPU") + ", " + number(game.rss_mb, " MB", 0)]); }
    const late = t.apply_lateness_ms;
    tele.push(["apply lateness", late ? number(late.p50, "", 2) + " / " + number(late.max, " ms", 2) +
               " (p50 / max)" : "-"]);
    tele.push(["encoder lag", number(t.recorder?.encoder_lag_ms, " ms")]);
    tele.push(["dropped frames", t.recorder?.dropped_frames ?? "-"]);
    tele.push(["GPU", t.gpu && t.gpu.length ? t.gpu.map(g => g.name + " " + g.util_percent + " %").join(", ")
                                            : "none"]);
    rows("telemetry", tele);
  }
  title();
}

async function showFrame(blob) {
  const image = await createImageBitmap(blob);
  if (canvas.width !== image.width || canvas.height !== image.height) {
    canvas.width = image.width; canvas.height = image.height;
  }
  context.drawImage(image, 0, 0);
  image.close();
  frames += 1;
  text("frames", String(frames));
  title();
}

function connect() {
  const socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
  socket.binaryType = "blob";
  socket.onopen = () => { text("status", "watching"); document.getElementById("status").className = ""; };
  socket.onmessage = (event) => {
    if (typeof event.data === "string") { showState(JSON.parse(event.data)); }
    else { showFrame(event.data); }
  };
  socket.onclose = () => {
    text("status", "disconnected; retrying");
    document.getElementById("status").className = "down";
    setTimeout(connect, 1000);
  };
}
connect();
</script>
</body>
</html>
"""
