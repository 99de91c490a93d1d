// Charts: plotly.js (inlined above), fed with counts and intervals computed by localeval, never raw arrays.
const CHARTS = [];
const RUN_COLOURS = ["#2f5bd3", "#e07b1a", "#2b9a5a", "#8e4fc7", "#c2417a", "#5d6b82"];
const PLOT_CONFIG = {displaylogo: false, responsive: true,
  modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d", "zoomIn2d", "zoomOut2d"]};

function plot(traces, layout, tall) {
  const div = h("div", {class: tall ? "chart tall" : "chart"});
  const base = {
    margin: {l: 46, r: 10, t: 10, b: 38}, autosize: true,
    font: {family: getComputedStyle(document.body).fontFamily, size: 11, color: "#1d2433"},
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", showlegend: false,
  };
  // Drawn once the element is in the page, so plotly measures its real width.
  CHARTS.push(() => Plotly.newPlot(div, traces, Object.assign(base, layout), PLOT_CONFIG));
  return div;
}

function drawCharts() {
  return Promise.all(CHARTS.map((draw) => draw()));
}

function histogramChart(column) {
  const traces = [], shapes = [];
  RUNS.forEach((run, k) => {
    const hist = run.histograms[column];
    if (!hist) return;
    const e = hist.edges, width = e[1] - e[0];
    traces.push({type: "bar", name: run.name, x: hist.counts.map((_, i) => (e[i] + e[i + 1]) / 2), y: hist.counts,
                 width: width * (MULTI ? 0.98 : 0.92), marker: {color: RUN_COLOURS[k % RUN_COLOURS.length]},
                 opacity: MULTI ? 0.55 : 0.85,
                 hovertemplate: `[%{x:.3f} ± ${(width / 2).toFixed(3)}]: %{y} samples<extra>${MULTI ? run.name : ""}</extra>`});
    if (hist.mean != null) {
      shapes.push({type: "line", x0: hist.mean, x1: hist.mean, yref: "paper", y0: 0, y1: 1,
                   line: {color: RUN_COLOURS[k % RUN_COLOURS.length], width: 2, dash: "dash"}});
    }
  });
  return plot(traces, {barmode: "overlay", bargap: 0, shapes, showlegend: MULTI,
                       legend: {orientation: "h", y: 1.12, x: 0, font: {size: 10}},
                       xaxis: {title: {text: column + " (dashed: mean)", font: {size: 11}}, zeroline: false},
                       yaxis: {title: {text: "samples", font: {size: 11}}, rangemode: "tozero"}});
}

// Paired differences with their intervals, one row per column, a line at 0.
function forestChart(comparison, a, b) {
  const rows = [];
  for (const col of comparison.columns) {
    const pair = col.pairs.find((p) => p.a === a && p.b === b);
    if (pair) rows.push({column: col.column, pair});
  }
  const colours = rows.map(({pair}) => pair.better === null ? "#8a93a3" : pair.better === pair.a ? RUN_COLOURS[0] : RUN_COLOURS[1]);
  const trace = {
    type: "scatter", mode: "markers", y: rows.map((r) => r.column), x: rows.map((r) => r.pair.diff),
    marker: {size: 9, color: colours},
    error_x: {type: "data", symmetric: false, color: "#5b6475", thickness: 1.5, width: 4,
              array: rows.map((r) => r.pair.high == null ? 0 : r.pair.high - r.pair.diff),
              arrayminus: rows.map((r) => r.pair.low == null ? 0 : r.pair.diff - r.pair.low)},
    hovertemplate: "%{y}: %{x:+.4f}<extra></extra>",
  };
  const height = Math.max(160, 26 * rows.length + 60);
  const div = plot([trace], {margin: {l: 170, r: 16, t: 8, b: 40},
    xaxis: {title: {text: `${a} − ${b} (${CONF} interval)`, font: {size: 11}}, zeroline: true, zerolinecolor: "#b3261e",
            zerolinewidth: 1.5},
    yaxis: {autorange: "reversed", automargin: true}});
  div.style.height = height + "px";
  return div;
}

// The 2×2 table of the judge's verdict at one threshold against a 0/1 label (a person's, or the relevance
// reference_doc_ids give a chunk), as a heatmap with the counts written in.
function confusionChart(confusion, threshold, y = ["human 1", "human 0"]) {
  const z = [[confusion.tp, confusion.fn], [confusion.fp, confusion.tn]];
  const x = [`judge ≥ ${fmt(threshold, 2)}`, `judge < ${fmt(threshold, 2)}`];
  const annotations = [];
  z.forEach((row, i) => row.forEach((value, j) => annotations.push({x: x[j], y: y[i], text: String(value), showarrow: false,
                                                                     font: {size: 15, color: "#1d2433"}})));
  return plot([{type: "heatmap", z, x, y, colorscale: [[0, "#f4f6f9"], [1, "#7fa0ea"]], showscale: false,
                hovertemplate: "%{y}, %{x}: %{z}<extra></extra>"}],
              {annotations, margin: {l: 70, r: 10, t: 10, b: 30}, yaxis: {autorange: "reversed", automargin: true}});
}

// The naive judge mean beside the labels-only and the prediction-powered intervals.
function ppiChart(block) {
  const rows = [
    {name: "judge mean (all)", x: block.naive_judge_mean_all ?? block.naive_judge_mean, low: null, high: null},
    {name: "labels only", x: block.classical_estimate, low: block.classical_ci[0], high: block.classical_ci[1]},
    {name: "PPI", x: block.estimate, low: block.ci[0], high: block.ci[1]},
  ];
  const trace = {
    type: "scatter", mode: "markers", y: rows.map((r) => r.name), x: rows.map((r) => r.x),
    marker: {size: 10, color: ["#8a93a3", "#e07b1a", "#2f5bd3"]},
    error_x: {type: "data", symmetric: false, thickness: 1.5, width: 5, color: "#5b6475",
              array: rows.map((r) => r.high == null ? 0 : r.high - r.x), arrayminus: rows.map((r) => r.low == null ? 0 : r.x - r.low)},
    hovertemplate: "%{y}: %{x:.4f}<extra></extra>",
  };
  return plot([trace], {margin: {l: 110, r: 14, t: 10, b: 34}, xaxis: {title: {text: `estimate (${Math.round((block.confidence || DATA.confidence) * 100)}% CLT interval)`, font: {size: 11}}},
                        yaxis: {autorange: "reversed"}});
}
