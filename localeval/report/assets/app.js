// The page, top to bottom: header and notes, summary, distributions, judge vs human, verdict thresholds,
// comparison, samples.
function headerPart() {
  const top = document.getElementById("top");
  const total = RUNS.reduce((n, r) => n + r.n_samples, 0);
  add(top, h("h1", null, DATA.title),
    h("div", {class: "meta"}, `${RUNS.length} run${MULTI ? "s" : ""} · ${count(total)} samples · generated ${DATA.generated}`
      + ` by localeval ${DATA.localeval} · self-contained: opening this file makes no network request`));
  for (const run of RUNS) {
    if (!run.embedded.all) {
      add(top, h("div", {class: "notice", id: "cap-notice"}, `${run.name}: ${count(run.embedded.n)} of ${count(run.n_samples)} samples`
        + ` are embedded for the table and drill-down (--max-samples ${count(run.embedded.max_samples)}); the summary, charts and`
        + " comparison use all of them."));
    }
    if (run.embedded.texts_cut) {
      add(top, h("div", {class: "notice"}, `${run.name}: ${count(run.embedded.texts_cut)} texts longer than`
        + ` ${count(run.embedded.max_text)} characters are cut in this page; samples.jsonl has them whole.`));
    }
  }
}

function summaryPart() {
  const node = section("summary", "Summary", `Mean, ${CONF} interval (PPI where the run has human labels, else a seeded`
    + " percentile bootstrap over the scored samples), spread and count per metric column; skipped samples are never scored as 0.");
  for (const run of RUNS) {
    const rows = run.summary.map((r) => {
      const ci = r.ci ? h("td", {class: "num", title: `${Math.round(r.ci.confidence * 100)}% ${r.ci.method}`},
        `[${fmt(r.ci.low, 4)}, ${fmt(r.ci.high, 4)}] `, h("span", {class: "badge" + (r.ci.method.startsWith("PPI") ? " info" : "")},
          r.ci.method.startsWith("PPI") ? "PPI" : "bootstrap")) : h("td", {class: "num muted"}, "–");
      const mean = valueCell(run, r.column, r.mean);
      mean.textContent = fmt(r.mean, 4);
      const reasons = Object.entries(r.skipped || {}).map(([reason, n]) => `${count(n)} ${reason}`).join("; ");
      return [h("td", {class: "mono"}, r.column), mean, ci, fmt(r.std, 4), count(r.n), count(r.n_skipped), h("td", {class: "small"}, reasons)];
    });
    const card = h("div", {class: "card"},
      h("h3", null, MULTI ? run.name : "Metrics", h("span", {class: "muted small"}, ` · ${count(run.n_samples)} samples from ${run.input || run.folder}`)),
      simpleTable(["metric", "mean", `${CONF} interval`, "std", "n", "skipped", "skip reasons"], rows, [1, 2, 3, 4, 5]),
      settingsPart(run));
    add(node, card);
  }
}

function settingsPart(run) {
  const parts = [];
  const judge = run.judge;
  if (judge) {
    const usage = Object.entries(judge.usage || {});
    const total = {};
    for (const [, u] of usage) for (const [k, v] of Object.entries(u)) total[k] = (total[k] || 0) + v;
    const row = (name, u) => [name, count(u.calls), count(u.classified || 0), count(u.prompt_tokens), count(u.cached_tokens),
                              count(u.generated_tokens), fmt(u.seconds, 1), count(u.cache_hits)];
    const trained = judge.classifier;
    parts.push(h("h4", null, "Judge"),
      trained && !judge.judge_model ? h("p", {class: "small muted"}, "The GGUF judge was not needed: every verdict came from the classifier.")
        : keyValues([["model", judge.judge_model], ["sha256", h("span", {class: "mono"}, judge.judge_sha256)], ["engine", judge.engine],
                     // on a GPU a verdict's number depends on how its tokens were batched (docs/pages/benchmarks/gpu.md)
                     ...(judge.gpu_layers ? [["on the GPU", `${judge.gpu_layers < 0 ? "every layer" : `${judge.gpu_layers} layer${judge.gpu_layers === 1 ? "" : "s"}`}, --parallel ${judge.parallel || 1}`]] : [])]),
      trained ? h("h4", null, "Classifier judge (localeval train)") : null,
      trained ? keyValues([["folder", trained.path], ["sha256", h("span", {class: "mono"}, trained.sha256)], ["language", trained.lang],
                           ...Object.entries(trained.judgements).map(([name, j]) => [name, `answers ${j.prompt}; held out: accuracy ${fmt(j.held_out.accuracy)}, AUROC ${fmt(j.held_out.auroc)} (n ${count(j.held_out.n)})`])])
              : null,
      h("h4", null, "Judge work"),
      simpleTable(["metric", "calls", "by the classifier", "prompt tokens", "reused tokens", "generated tokens", "seconds", "cache hits"],
                  usage.map(([m, u]) => row(m, u)).concat(usage.length > 1 ? [row("total", total)] : []), [1, 2, 3, 4, 5, 6, 7]));
  }
  const settings = Object.entries(run.settings || {}).map(([metric, s]) =>
    [h("span", {class: "mono"}, metric), h("span", {class: "small"}, Object.entries(s || {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", "))]);
  const details = h("details", null, h("summary", null, "Run settings and versions"),
    keyValues([["folder", run.folder], ["input", run.input], ...Object.entries(run.extra || {}).map(([k, v]) => [k, JSON.stringify(v)])]),
    h("h4", null, "Metric settings"), keyValues(settings),
    h("h4", null, "Versions"), keyValues(Object.entries(run.versions || {})));
  return h("div", null, parts, details);
}

function distributionsPart() {
  const columns = [...new Set(RUNS.flatMap((r) => r.columns))];
  const node = section("distributions", "Distributions", "Per-sample scores of each metric column (all samples, not only the embedded ones)"
    + (MULTI ? "; runs overlaid." : "."));
  add(node, h("div", {class: "grid"}, columns.map((column) => {
    const stats = RUNS.filter((r) => r.histograms[column]).map((r) => `${MULTI ? r.name + ": " : ""}mean ${fmt(r.histograms[column].mean)}, n ${count(r.histograms[column].n)}`);
    return h("div", {class: "card"}, h("h3", {class: "mono"}, column), h("div", {class: "small muted"}, stats.join(" · ")), histogramChart(column));
  })));
}

function labelsPart() {
  const labelled = RUNS.filter((r) => r.labels);
  if (!labelled.length) return;
  const node = section("labels", "Judge vs human", "Where people labelled samples 0/1: how often the judge agrees at the 0.5"
    + " threshold and at the threshold that best matches the labels, and the prediction-powered (PPI++) estimate beside the naive judge mean.");
  for (const run of labelled) {
    const cards = [];
    for (const [column, entry] of Object.entries(run.labels.metrics)) {
      const body = [h("h3", {class: "mono"}, column)];
      if (entry.error) body.push(h("div", {class: "notice"}, entry.error));
      if (entry.agreement) {
        const a = entry.agreement, d = a["at_0.5"], c = a.at_chosen;
        body.push(confusionChart(d.confusion, 0.5),
          simpleTable(["threshold", "n", "accuracy", "balanced acc.", "kappa"],
                      [["0.5", count(d.n), fmt(d.accuracy), fmt(d.balanced_accuracy), fmt(d.kappa)],
                       [`${fmt(a.threshold, 3)} (best on these labels)`, count(c.n), fmt(c.accuracy), fmt(c.balanced_accuracy), fmt(c.kappa)]],
                      [1, 2, 3, 4]));
      }
      const p = entry.ppi;
      if (p && p.ci) {
        body.push(h("h4", null, "Estimates"), ppiChart(p), simpleTable(["estimate", "value", "interval"], [
          ["judge mean (all scored)", fmt(p.naive_judge_mean_all ?? p.naive_judge_mean, 4), ""],
          ["labels only", fmt(p.classical_estimate, 4), `[${fmt(p.classical_ci[0], 4)}, ${fmt(p.classical_ci[1], 4)}]`],
          ["PPI", fmt(p.estimate, 4), `[${fmt(p.ci[0], 4)}, ${fmt(p.ci[1], 4)}]`]], [1, 2]),
          h("div", {class: "small muted"}, `λ = ${fmt(p.lambda, 3)}, ${count(p.n_labeled)} labelled, ${count(p.n_unlabeled)} unlabelled samples`));
      } else if (p && p.error) {
        body.push(h("div", {class: "notice"}, p.error));
      }
      if (!entry.agreement && !entry.error) body.push(h("div", {class: "small muted"}, "Agreement needs the labels themselves: `localeval calibrate` or `report --labels`."));
      cards.push(h("div", {class: "card"}, body));
    }
    add(node, h("div", {class: "small muted"}, `${MULTI ? run.name + ": " : ""}labels from ${run.labels.source}`), h("div", {class: "grid"}, cards));
  }
}

// What `localeval calibrate` fitted without labels: the chunk verdicts of context_precision and
// passage_relevance against the relevance the samples' reference_doc_ids give each chunk.
function verdictThresholdsPart() {
  const fitted = RUNS.filter((r) => r.verdict_thresholds);
  if (!fitted.length) return;
  const node = section("verdicts", "Verdict thresholds", "Each retrieved chunk with an id: the judge's P that it is useful"
    + " or relevant against the relevance its sample's reference_doc_ids give it, at 0.5, at the threshold the run was"
    + " scored at, and at the threshold that agrees best (what localeval calibrate fits). That threshold is chosen on the"
    + " same chunks, so its figures are optimistic; scoring again with it reads the judge's cached answers and does not"
    + " run the judge.");
  for (const run of fitted) {
    const cards = Object.entries(run.verdict_thresholds).map(([metric, entry]) => {
      const body = [h("h3", {class: "mono"}, metric),
        h("div", {class: "small muted"}, `${count(entry.n_chunks)} chunks of ${count(entry.n_samples)}`
          + ` sample${entry.n_samples === 1 ? "" : "s"}, ${count(entry.n_relevant)} relevant by reference_doc_ids`)];
      if (entry.error) body.push(h("div", {class: "notice"}, entry.error));
      if (entry.agreement) {
        const a = entry.agreement, d = a["at_0.5"], c = a.at_chosen;
        const row = (label, x) => [label, fmt(x.balanced_accuracy), fmt(x.accuracy), fmt(x.judge_positive_rate)];
        const used = (run.settings[metric] || {}).threshold, atRun = entry.at_run;  // only where the run used another than 0.5
        body.push(confusionChart(c.confusion, a.threshold, ["relevant", "not relevant"]),
          simpleTable(["threshold", "balanced acc.", "accuracy", "judged yes"],
                      [row("0.5", d), atRun ? row(`${fmt(atRun.threshold, 3)} (this run)`, atRun) : null,
                       row(`${fmt(a.threshold, 3)} (fitted)`, c)].filter(Boolean), [1, 2, 3]),
          typeof used === "number" && !atRun ? h("div", {class: "small muted"}, `this run was scored at ${fmt(used, 3)}`
            + (Math.abs(used - a.threshold) < 1e-6 ? ", the fitted threshold" : "")) : null,
          h("div", {class: "small"}, "to score with it: ",
            h("span", {class: "mono"}, `localeval score ... --verdict-threshold ${entry.verdict_threshold}`)));
      }
      return h("div", {class: "card"}, body);
    });
    add(node, MULTI ? h("div", {class: "small muted"}, run.name) : null, h("div", {class: "grid"}, cards));
  }
}

function comparisonPart() {
  const cmp = DATA.comparison;
  if (!cmp) return;
  const node = section("comparison", "Comparison", `Paired per-sample differences on the samples every run scored; ${CONF}`
    + " paired bootstrap intervals (PPI where both runs have labels). An interval covering 0 means not distinguishable;"
    + " no multiple-comparison correction.");
  if (cmp.error) { add(node, h("div", {class: "notice error"}, cmp.error)); return; }
  if (!cmp.columns.length || !cmp.winloss.length) {
    add(node, h("div", {class: "notice"}, "These runs have no metric column in common: there is nothing to pair."));
    return;
  }
  const pairs = [];
  for (let i = 0; i < cmp.runs.length; i++) for (let j = i + 1; j < cmp.runs.length; j++) pairs.push([cmp.runs[i], cmp.runs[j]]);
  for (const [a, b] of pairs) {
    const rows = cmp.columns.map((col) => {
      const p = col.pairs.find((x) => x.a === a && x.b === b);
      const verdict = p.better ? h("span", {class: "verdict-better"}, `${p.better} is better`) : h("span", {class: "verdict-same"}, "not distinguishable");
      return [h("td", {class: "mono"}, col.column), fmt(col.means[a], 4), fmt(col.means[b], 4), signed(p.diff),
              p.low == null ? "–" : `[${signed(p.low)}, ${signed(p.high)}]`, p.method, count(col.n), verdict];
    });
    add(node, h("div", {class: "card"}, h("h3", null, `${a} vs ${b}`), forestChart(cmp, a, b),
      simpleTable(["metric", `mean ${a}`, `mean ${b}`, "difference", `${CONF} interval`, "method", "n", "verdict"], rows, [1, 2, 3, 4, 6])));
  }
  const winLoss = winLossPart(cmp);
  add(node, winLoss);
  trackVisibleWidth(winLoss.querySelector(".winloss-body"));
}

function winLossPart(cmp) {
  const state = {k: 0, side: "a_wins"};
  const holder = h("div", {class: "winloss-body"});
  const select = h("select", {id: "winloss-select", onchange: () => { state.k = Number(select.value); draw(); }},
    cmp.winloss.map((w, k) => h("option", {value: k}, `${w.column}: ${MULTI && cmp.runs.length > 2 ? w.a + " vs " + w.b : ""}`.replace(/: $/, ""))));
  const sideSelect = h("select", {id: "winloss-side", onchange: () => { state.side = sideSelect.value; draw(); }});
  function draw() {
    const w = cmp.winloss[state.k];
    fill(sideSelect, h("option", {value: "a_wins"}, `${w.a} better`), h("option", {value: "b_wins"}, `${w.b} better`));
    sideSelect.value = state.side;
    const runA = RUNS.find((r) => r.name === w.a), runB = RUNS.find((r) => r.name === w.b);
    const byId = (run) => run._byId || (run._byId = new Map(run.samples.map((s) => [s.id, s])));
    const body = h("tbody");
    for (const row of w[state.side]) {
      const ea = byId(runA).get(row.id), eb = byId(runB).get(row.id);
      const tr = h("tr", {class: "sample-row", "data-id": row.id}, h("td", {class: "mono"}, row.id),
        h("td", {class: "question", lang: ea && ea.lang === "zh" ? "zh-Hans" : null}, ea ? ea.q : ""),
        valueCell(runA, w.column, row.a), valueCell(runB, w.column, row.b), h("td", {class: "num"}, signed(row.a - row.b, 3)));
      const opened = h("tr", {class: "drill"}, h("td", {colspan: 5}, h("div", {class: "drill-grid"}, drilldown(runA, ea), drilldown(runB, eb))));
      tr.addEventListener("click", () => { if (opened.isConnected) { opened.remove(); tr.classList.remove("open"); } else { tr.after(opened); tr.classList.add("open"); } });
      add(body, tr);
    }
    if (!w[state.side].length) add(body, h("tr", null, h("td", {colspan: 5, class: "muted"}, "none")));
    fill(holder, 
      h("p", {class: "small"}, `On ${count(w.n)} samples scored by both: ${w.a} better on ${count(w.a_better)}, ${w.b} better on`
        + ` ${count(w.b_better)}, tied on ${count(w.ties)}. Largest differences first (at most ${count(w.top)} each way); click a row to see both answers.`),
      h("div", {class: "scroll"}, h("table", {class: "samples"}, h("thead", null, h("tr", null, h("th", null, "id"), h("th", null, "question"),
        h("th", {class: "num"}, w.a), h("th", {class: "num"}, w.b), h("th", {class: "num"}, "difference"))), body)));
  }
  draw();
  return h("div", {class: "card", id: "winloss"}, h("h3", null, "Where one system wins and the other loses"),
           h("div", {class: "controls"}, h("label", null, "metric", select), h("label", null, "show samples where", sideSelect)), holder);
}

function footerPart() {
  add(document.getElementById("footer"), `localeval ${DATA.localeval} · charts by ${DATA.plotly}, inlined · `
    + "all data of this report is inside this file");
}

function main() {
  headerPart();
  summaryPart();
  distributionsPart();
  labelsPart();
  verdictThresholdsPart();
  comparisonPart();
  sampleSection();
  footerPart();
  return drawCharts();
}

function ready(state) {
  document.documentElement.setAttribute("data-ready", state);
  window.localevalReadyMs = performance.now();
}

try {
  main().then(() => ready("1"), (err) => { console.error("chart failed:", err); ready("error"); });
} catch (err) {
  document.getElementById("main").prepend(h("div", {class: "notice error"}, "This report could not be drawn: " + err));
  console.error(err);
  ready("error");
}
