// One sample opened: its texts, contexts (ids, ranks, grades, the judge's P(useful), the sentences
// context_relevance chose highlighted), every statement the judge checked with its probability, the
// generated questions, skip reasons and human labels. Known detail shapes get a view; others are shown as JSON.
const DETAIL_VIEWS = {
  faithfulness: (d) => statementsView(d, "supported", `Statements of the answer, each checked against the ${
    d.against === "reference_docs" ? "reference documents" : "contexts"}${d.windows > 1 ? ` (${d.windows} windows)` : ""}`),
  context_recall: (d) => statementsView(d, "attributable", "Statements of the reference, each checked against the contexts"),
  grounding: groundingView,
  answer_relevance: questionsView,
  answer_relevance_rating: ratingView,
  context_relevance: (d) => h("div", {class: "small"}, `${d.needed.length} of ${d.sentences} context sentences ${
    d.p ? "judged needed (P ≥ 0.5)" : "listed as needed"} `,
    h("mark", {class: "needed"}, "highlighted"), " in the contexts above",
    d.out_of_range_numbers_ignored ? ` (${d.out_of_range_numbers_ignored} out-of-range numbers ignored)` : ""),
  context_precision: (d) => h("div", {class: "small"},
    `P(useful for the ${d.against}) is shown on each context; ${d.useful.filter((u) => u.relevant).length} of ${d.useful.length} at ≥ 0.5`),
  answer_correctness: (d) => h("div", null,
    statementsView(d, "correct", "Statements of the answer, each checked against the reference"),
    statementsView({statements: d.reference_statements, lang: d.lang}, "covered", "Statements of the reference, each looked for in the answer")),
  claim_recall: (d) => claimsView(d.reference_claims, d.lang, "Statements of the reference, each looked for in every chunk",
    [["context", "P(in a chunk)"], ["chunk", "best chunk"]]),
  context_utilization: (d) => claimsView(d.reference_claims, d.lang, "Statements of the reference: in the chunks, and in the answer",
    [["context", "P(in a chunk)"], ["answer", "P(in the answer)"]]),
  noise_sensitivity: (d) => claimsView(d.claims, d.lang, "Statements of the answer: right, and supported by which chunks",
    [["correct", "P(right)"], ["relevant_chunk", "P(from a relevant chunk)"], ["irrelevant_chunk", "P(from an irrelevant chunk only)"]]),
  hallucination: unfaithfulClaimsView,
  self_knowledge: unfaithfulClaimsView,
  passage_relevance: (d) => h("div", {class: "small"},
    `P(relevant to the question) is shown on each context; ${d.passages.filter((p) => p.relevant).length} of ${d.passages.length} at ≥ 0.5`),
};

function drilldown(run, entry) {
  if (!entry) return h("div", {class: "muted"}, "This sample is not embedded in the report (see the note at the top).");
  const lang = entry.lang === "zh" ? "zh-Hans" : entry.lang;
  const side = h("div", {class: "drill-side"});
  if (MULTI) add(side, h("h3", null, run.name));
  add(side, metricChips(run, entry));
  add(side, labelsAndSkips(run, entry));
  add(side, textField("Question", entry.q, lang));
  if (entry.a != null) add(side, textField("Answer", entry.a, lang));
  if (entry.ref != null) add(side, textField("Reference", entry.ref, lang));
  if (entry.ctx) add(side, contextsView(entry, lang));
  if (entry.unretrieved && entry.unretrieved.length) {
    add(side, h("div", {class: "small"}, "Relevant documents not retrieved: ", entry.unretrieved.map((id, i) => [i ? ", " : "", h("span", {class: "mono"}, id)])));
  }
  if (entry.refdocs) {
    add(side, h("div", {class: "field"}, "Reference documents"));
    entry.refdocs.forEach((doc) => add(side, h("div", {class: "text-block", lang}, doc.id ? h("span", {class: "badge"}, doc.id) : null, doc.id ? " " : null, doc.text)));
  }
  for (const [metric, details] of Object.entries(entry.d)) {
    add(side, h("div", {class: "field"}, metric));
    const view = DETAIL_VIEWS[metric] || (metric.startsWith("criteria.") ? criterionView : null);
    let node = null;
    try { node = view ? view(details, lang) : null; } catch (err) { node = null; }
    add(side, node || h("pre", {class: "json"}, JSON.stringify(details, null, 1)));
  }
  if (entry.jw) {
    const w = entry.jw;
    add(side, h("div", {class: "small muted"}, `Judge work for this sample: ${count(w.calls)} calls, ${count(w.prompt_tokens)} prompt tokens`
      + ` (${count(w.cached_tokens)} reused), ${count(w.generated_tokens)} generated, ${fmt(w.seconds, 2)} s, ${count(w.cache_hits)} answered from the cache`));
  }
  return side;
}

function metricChips(run, entry) {
  return h("div", {class: "chips"}, run.columns.map((column, i) => {
    const v = entry.v[i];
    if (v == null) return null;
    return chip(column, v, isUnit(run, column) ? (lowerBetter(run, column) ? 1 - v : v) : null);
  }));
}

function labelsAndSkips(run, entry) {
  const parts = [];
  for (const [column, label] of Object.entries(entry.lab || {})) {
    const judged = entry.v[run.columns.indexOf(column)];
    const agree = judged == null ? null : (judged >= 0.5) === (label === 1);
    parts.push(h("span", {class: "badge " + (agree === false ? "bad" : "info"),
                          title: "human label (judge at 0.5 " + (agree === false ? "disagrees" : "agrees") + ")"},
                 `human ${column} = ${label}`));
  }
  for (const [metric, reason] of Object.entries(entry.sk)) {
    parts.push(h("span", {class: "badge bad", title: "skipped"}, `${metric} skipped: ${reason}`));
  }
  return parts.length ? h("div", {class: "chips"}, parts) : null;
}

function textField(name, text, lang) {
  return [h("div", {class: "field"}, name), h("div", {class: "text-block", lang}, text === "" ? h("span", {class: "muted"}, "(empty)") : text)];
}

function contextsView(entry, lang) {
  const out = [h("div", {class: "field"}, `Contexts (${entry.ctx.length}, in rank order)`)];
  for (const ctx of entry.ctx) {
    const head = h("div", {class: "head"}, h("strong", null, `#${ctx.rank}`), ctx.id != null ? h("span", {class: "mono"}, ctx.id) : null);
    if (ctx.grade != null) {
      add(head, h("span", {class: "badge " + (ctx.grade > 0 ? "good" : ""), title: "grade in reference_doc_ids"},
                    ctx.grade > 0 ? `relevant (grade ${ctx.grade})` : "not relevant"));
    }
    for (const [key, label, title] of [["useful", "P(useful)", "judge: P(this context is useful)"],
                                       ["relevant", "P(relevant)", "judge: P(this context answers the question)"]]) {
      if (ctx[key] == null) continue;
      const node = h("span", {class: "chip", title}, `${label} ${fmt(ctx[key])}`);
      node.style.background = scoreColour(ctx[key]);
      add(head, node);
    }
    const body = h("div", {class: "body", lang}, highlighted(ctx.text, ctx.hl || []));
    out.push(h("div", {class: "context"}, head, body));
  }
  return out;
}

// The text with the [start, end) spans context_relevance chose wrapped in <mark>.
function highlighted(text, spans) {
  const parts = [];
  let pos = 0;
  for (const [start, end] of spans) {
    parts.push(text.slice(pos, start), h("mark", {class: "needed", title: "needed (context_relevance)"}, text.slice(start, end)));
    pos = end;
  }
  parts.push(text.slice(pos));
  return parts.filter((p) => p !== "");
}

function statementsView(details, key, caption) {
  const rows = details.statements.map((s) => {
    const p = h("td", {class: "prob"}, fmt(s.p));
    p.style.background = scoreColour(s.p);
    // held: the passages share almost none of its words, so its P is held to the answer's lowest
    const held = s.held ? h("span", {class: "small muted"}, " (held: the passages do not mention it)") : null;
    // run_on: text aimed at the judge ran on after it with no full stop; P is the lowest of its cuts
    const runOn = s.run_on ? h("span", {class: "small muted"}, " (text aimed at the judge ran on after it" +
      (s.lowest_cut ? `; P from its cut “${s.lowest_cut}”` : "") + ")") : null;
    return h("tr", null, h("td", {lang: details.lang === "zh" ? "zh-Hans" : null}, s.text, held, runOn), p,
             h("td", {class: "prob"}, h("span", {class: "badge " + (s[key] ? "good" : "bad")}, s[key] ? key : "not " + key)));
  });
  // set_aside: passage sentences sharing no word with what the answer adds to the question, not shown to the judge
  const aside = details.set_aside ? h("div", {class: "small muted"},
    `${details.set_aside} passage sentence${details.set_aside === 1 ? "" : "s"} not shown to the judge (naming nothing the answer adds to the question)`) : null;
  return h("div", null, h("div", {class: "small muted"}, caption),
           h("table", {class: "statements"}, h("thead", null, h("tr", null, h("th", null, "statement"), h("th", {class: "num"}, "P"), h("th", null, ""))),
             h("tbody", null, rows.length ? rows : h("tr", null, h("td", {colspan: 3, class: "muted"}, "no statements")))),
           aside, aimedView(details.aimed_at_judge));
}

// hallucination and self_knowledge read the same verdicts of the answer's claims.
function unfaithfulClaimsView(d) {
  return claimsView(d.claims, d.lang, "Statements of the answer: right, and in a chunk",
    [["correct", "P(right)"], ["context", "P(in a chunk)"], ["chunk", "best chunk"]]);
}

// RAGChecker's claims: one row a claim, one column a probability (coloured) or the rank of its best chunk.
function claimsView(claims, lang, caption, columns) {
  const rows = claims.map((c) => h("tr", null, h("td", {lang: lang === "zh" ? "zh-Hans" : null}, c.text),
    ...columns.map(([key]) => {
      if (key === "chunk") return h("td", {class: "num"}, c.chunk == null ? "–" : `#${c.chunk}`);
      const cell = h("td", {class: "prob"}, fmt(c[key]));
      cell.style.background = scoreColour(c[key]);
      return cell;
    })));
  return h("div", null, h("div", {class: "small muted"}, caption),
           h("table", {class: "statements"}, h("thead", null, h("tr", null, h("th", null, "statement"),
             ...columns.map(([, label]) => h("th", {class: "num"}, label)))),
             h("tbody", null, rows.length ? rows : h("tr", null, h("td", {colspan: columns.length + 1, class: "muted"}, "no statements")))));
}

// Text cut before judging because it was aimed at the judge (an order to answer Yes, a forged chat turn).
function aimedView(aimed) {
  if (!aimed) return null;
  const items = Object.entries(aimed).flatMap(([where, cuts]) => cuts.map((cut) => h("li", null, `${where}: `, h("code", null, cut))));
  return h("div", {class: "aimed"}, h("div", {class: "small muted"}, "Cut before judging, as text aimed at the judge:"), h("ul", null, items));
}

// grounding's least expected answer tokens: a likelihood that only ranks, so the probabilities are not coloured.
function groundingView(details, lang) {
  const words = details.unexpected || [];
  const rows = words.map((w) => {
    const token = w.text.trim() || "␣";
    const word = w.word || token;  // the word the token is part of: "Nineteen" for its token "Nin"
    return h("tr", null, h("td", {lang}, h("code", null, word), word !== token ? h("span", {class: "muted"}, ` token “${token}”`) : null),
             h("td", {class: "num"}, `#${w.token + 1}`), h("td", {class: "prob"}, Number(w.p).toPrecision(2)));
  });
  return h("div", null,
    h("div", {class: "small muted"}, `The answer's least expected tokens given the question and the contexts (${count(details.tokens)} tokens`
      + " in all): check each against the contexts. The headline is the geometric mean of the lowest tenth's probabilities."),
    rows.length ? h("table", {class: "statements tokens"}, h("thead", null, h("tr", null, h("th", null, "word"), h("th", {class: "num"}, "token"), h("th", {class: "num"}, "P"))),
                    h("tbody", null, rows))
      : h("div", {class: "small"}, `lowest log-probabilities: ${(details.lowest || []).map((v) => fmt(v, 3)).join(", ")}`),
    aimedView(details.aimed_at_judge));
}

function questionsView(details) {
  const rows = details.questions.map((q) => {
    const c = h("td", {class: "prob"}, fmt(q.cosine));
    c.style.background = scoreColour(q.cosine);
    return h("tr", null, h("td", {lang: details.lang === "zh" ? "zh-Hans" : null}, q.text), c);
  });
  return h("div", null, h("div", {class: "small muted"}, "Questions the judge generated from the answer, with their cosine similarity to the question"
    + (details.noncommittal ? " — the judge found the answer noncommittal (score 0)" : "")),
           h("table", {class: "statements"}, h("thead", null, h("tr", null, h("th", null, "generated question"), h("th", {class: "num"}, "cosine"))), h("tbody", null, rows)));
}

// A user's criterion: the distribution over its levels, or P(yes) for a yes/no criterion.
function criterionView(details) {
  const rated = details.distribution ? ratingView(details)
    : h("div", {class: "small"}, `P(the criterion holds) = ${fmt(details.p_yes)}`);
  return h("div", null, rated, aimedView(details.aimed_at_judge));
}

function ratingView(details) {
  const dist = details.distribution;
  const keys = Object.keys(dist).sort((a, b) => Number(a) - Number(b));
  const max = Math.max(...keys.map((k) => dist[k]), 1e-9);
  const expected = details.expected_rating != null ? details.expected_rating : details.expected_level;
  return h("div", null,
    h("div", {class: "small muted"}, `The judge's distribution over the levels ${keys[0]}–${keys[keys.length - 1]}; expected ${fmt(expected, 2)}`),
    h("div", {class: "bars"}, keys.map((k) => h("div", {title: `${k}: ${fmt(dist[k])}`, style: `height:${Math.max(2, 46 * dist[k] / max)}px`}))),
    h("div", {class: "bar-labels"}, keys.map((k) => h("span", null, k))));
}
