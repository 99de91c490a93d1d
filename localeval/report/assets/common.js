// Helpers every part of the page uses. Sample texts are user data: they only ever reach the page as text
// nodes (h() never sets innerHTML), so a question holding markup is shown, not run.
window.localevalStartMs = performance.now();  // plotly.js is parsed by now: the bench splits the load time here
const DATA = JSON.parse(document.getElementById("report-data").textContent);
const CONF = Math.round(DATA.confidence * 100) + "%";
const RUNS = DATA.runs;
const MULTI = RUNS.length > 1;

function h(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value == null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  return add(node, ...children);
}

// Node.append would write arrays and nulls as text: these flatten and skip them.
function add(node, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child == null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function fill(node, ...children) {
  node.replaceChildren();
  return add(node, ...children);
}

function fmt(value, digits = 3) {
  return value == null ? "–" : Number(value).toFixed(digits);
}

function count(value) {
  return value == null ? "–" : Number(value).toLocaleString("en-US");
}

function signed(value, digits = 4) {
  return value == null ? "–" : (value >= 0 ? "+" : "") + Number(value).toFixed(digits);
}

// Red (bad) through yellow to green (good) for a score in [0, 1]; reversed where lower is better.
function scoreColour(value, lowerBetter) {
  const p = Math.max(0, Math.min(1, lowerBetter ? 1 - value : value));
  return `hsl(${Math.round(p * 120)}, 70%, 85%)`;
}

// A score in [0, 1] whose value means the same on every run (not a likelihood that only ranks: see
// `relative` in collect.py), so red-to-green colouring says something.
function isUnit(run, column) {
  const hist = run.histograms[column];
  const row = run.summary.find((r) => r.column === column);
  return Boolean(hist && hist.edges[0] === 0 && hist.edges[hist.edges.length - 1] === 1 && !(row && row.relative));
}

function lowerBetter(run, column) {
  const row = run.summary.find((r) => r.column === column);
  return Boolean(row && row.lower_is_better);
}

// A table cell for a metric value, coloured when the column is a score in [0, 1].
function valueCell(run, column, value) {
  const td = h("td", {class: "value", text: fmt(value)});
  if (value != null && isUnit(run, column)) td.style.background = scoreColour(value, lowerBetter(run, column));
  if (value == null) td.classList.add("muted");
  return td;
}

function chip(label, value, colourBy) {
  const node = h("span", {class: "chip", title: label}, `${label} ${fmt(value)}`);
  if (value != null && colourBy != null) node.style.background = scoreColour(colourBy);
  return node;
}

function simpleTable(headers, rows, numeric = []) {
  const head = h("tr", null, headers.map((text, i) => h("th", {class: numeric.includes(i) ? "num" : null}, text)));
  const body = rows.map((cells) => h("tr", null, cells.map((cell, i) =>
    cell instanceof Node && cell.tagName === "TD" ? cell : h("td", {class: numeric.includes(i) ? "num" : null}, cell))));
  return h("div", {class: "scroll"}, h("table", null, h("thead", null, head), h("tbody", null, body)));
}

function keyValues(pairs) {
  return h("dl", {class: "kv"}, pairs.filter(([, v]) => v != null && v !== "").map(([k, v]) => [h("dt", null, k), h("dd", null, v)]));
}

function section(id, title, intro) {
  const node = h("section", {id}, h("h2", null, title), intro ? h("p", {class: "intro"}, intro) : null);
  add(document.getElementById("main"), node);
  add(document.getElementById("nav"), h("a", {href: "#" + id}, title));
  return node;
}

function runLabel(run) {
  return MULTI ? run.name : "";
}

// Long column names ("answer_relevance_rating") may break after "_" and "." in narrow headers.
function breakable(name) {
  return name.split(/(?<=[_.])/).map((part, i) => [i ? h("wbr") : null, part]);
}

// Tables wider than the page scroll sideways; their drill-downs are sized to what is visible (see CSS).
function trackVisibleWidth(holder) {
  const update = () => holder.style.setProperty("--visible", holder.clientWidth + "px");
  update();
  window.addEventListener("resize", update);
}
