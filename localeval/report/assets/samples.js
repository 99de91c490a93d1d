// The per-sample table: one run at a time, sortable (worst first by any column), filterable by text,
// by a bound on the sorted column, by skips and labels; paginated so 10,000 rows cost one page of DOM.
const PAGE_SIZE = 50;

function sampleSection() {
  const node = section("samples", "Samples",
    "Click a row to open it. Sorted worst first by the chosen column; search looks in ids, questions, answers and references.");
  const state = {run: 0, sort: null, desc: false, query: "", bound: "", skipsOnly: false, labelledOnly: false, page: 0, open: new Set()};
  const controls = h("div", {class: "controls"});
  const notice = h("div");
  const tableHolder = h("div", {class: "scroll"});
  const pager = h("div", {class: "pager"});
  add(node, h("div", {class: "card"}, controls, notice, tableHolder, pager));

  const runSelect = h("select", {id: "sample-run", onchange: () => { state.run = Number(runSelect.value); resetSort(); rebuild(); }},
    RUNS.map((run, i) => h("option", {value: i}, run.name)));
  const sortSelect = h("select", {id: "sample-sort", onchange: () => {
    state.sort = sortSelect.value || null;
    state.desc = state.sort ? lowerBetter(run(), state.sort) : false;  // worst first, as the header click sorts
    state.page = 0;
    render();
  }});
  const orderButton = h("button", {id: "sample-order", onclick: () => { state.desc = !state.desc; state.page = 0; render(); }});
  const search = h("input", {id: "sample-search", type: "search", placeholder: "search text or id…",
                             oninput: () => { state.query = search.value.trim().toLowerCase(); state.page = 0; render(); }});
  const bound = h("input", {id: "sample-bound", type: "number", step: "0.05", style: "width:80px", placeholder: "any",
                            oninput: () => { state.bound = bound.value; state.page = 0; render(); }});
  const skips = h("input", {type: "checkbox", id: "sample-skips", onchange: () => { state.skipsOnly = skips.checked; state.page = 0; render(); }});
  const labelled = h("input", {type: "checkbox", id: "sample-labelled", onchange: () => { state.labelledOnly = labelled.checked; state.page = 0; render(); }});
  add(controls, 
    MULTI ? h("label", null, "run", runSelect) : null,
    h("label", null, "sort by", sortSelect, orderButton),
    h("label", {title: "keep samples whose sorted column is at most this value (at least, for lower-is-better columns)"}, "worse than", bound),
    h("label", null, search),
    h("label", null, skips, "with a skip"),
    // only where samples carry their labels (report --labels); a run's own PPI labels name no sample here
    RUNS.some((r) => r.samples.some((s) => s.lab)) ? h("label", null, labelled, "labelled") : null);

  function run() { return RUNS[state.run]; }

  function resetSort() {
    const columns = run().columns;
    const preferred = ["faithfulness", "answer_relevance", "context_recall", "ndcg@10", "ndcg@5"].find((c) => columns.includes(c));
    state.sort = preferred || columns[0] || null;
    state.desc = state.sort ? lowerBetter(run(), state.sort) : false;
    state.page = 0;
    state.open.clear();
  }

  function rebuild() {
    const r = run();
    fill(sortSelect, h("option", {value: ""}, "file order"), r.columns.map((c) => h("option", {value: c}, c)));
    sortSelect.value = state.sort || "";
    const e = r.embedded;
    fill(notice, e.all ? "" : h("div", {class: "notice"},
      `${count(e.n)} of ${count(r.n_samples)} samples are embedded: the lowest-scoring ones, each metric column's worst in turn`
      + " (and those the comparison lists). The summary and charts use all of them; the rest are in samples.jsonl"
      + " (raise --max-samples to embed more)."));
    render();
  }

  function haystack(entry) {
    if (entry._text == null) entry._text = [entry.id, entry.q, entry.a, entry.ref].filter((t) => t != null).join("\n").toLowerCase();
    return entry._text;
  }

  function rows() {
    const r = run();
    const col = state.sort ? r.columns.indexOf(state.sort) : -1;
    const lower = col >= 0 && lowerBetter(r, state.sort);
    const limit = state.bound === "" ? null : Number(state.bound);
    let list = r.samples.filter((s) => (!state.query || haystack(s).includes(state.query))
      && (!state.skipsOnly || Object.keys(s.sk).length > 0)
      && (!state.labelledOnly || s.lab)
      && (limit == null || col < 0 || (s.v[col] != null && (lower ? s.v[col] >= limit : s.v[col] <= limit))));
    if (col >= 0) {
      const sign = state.desc ? -1 : 1;
      list = list.slice().sort((x, y) => {
        const a = x.v[col], b = y.v[col];
        if (a == null || b == null) return (a == null) - (b == null);  // unscored last, whichever the order
        return sign * (a - b);
      });
    } else if (state.desc) {
      list = list.slice().reverse();
    }
    return list;
  }

  function render() {
    const r = run();
    const list = rows();
    const pages = Math.max(1, Math.ceil(list.length / PAGE_SIZE));
    state.page = Math.min(state.page, pages - 1);
    const col = state.sort ? r.columns.indexOf(state.sort) : -1;
    const worst = col >= 0 && state.desc === lowerBetter(r, state.sort);
    orderButton.textContent = col < 0 ? (state.desc ? "reversed" : "as in the file") : (worst ? "worst first" : "best first");
    const header = h("tr", null, h("th", null, "id"), h("th", null, "question"),
      r.columns.map((c) => h("th", {class: "num sortable" + (c === state.sort ? (state.desc ? " sorted-desc" : " sorted-asc") : ""),
                                    title: "sort by " + c, onclick: () => {
        if (state.sort === c) state.desc = !state.desc; else { state.sort = c; state.desc = lowerBetter(r, c); }
        sortSelect.value = c; state.page = 0; render();
      }}, breakable(c))),
      h("th", {class: "num"}, "skipped"));
    const body = h("tbody");
    for (const entry of list.slice(state.page * PAGE_SIZE, (state.page + 1) * PAGE_SIZE)) {
      const tr = h("tr", {class: "sample-row", "data-id": entry.id},
        h("td", {class: "mono"}, entry.id),
        h("td", {class: "question", lang: entry.lang === "zh" ? "zh-Hans" : null, title: entry.q}, entry.q),
        r.columns.map((c, i) => valueCell(r, c, entry.v[i])),
        h("td", {class: "num"}, Object.keys(entry.sk).length || ""));
      add(body, tr);
      const opened = h("tr", {class: "drill"}, h("td", {colspan: r.columns.length + 3}, h("div", {class: "drill-grid single"}, drilldown(r, entry))));
      tr.addEventListener("click", () => toggle(tr, opened, entry.id));
      if (state.open.has(entry.id)) { tr.classList.add("open"); add(body, opened); }
    }
    if (!list.length) add(body, h("tr", null, h("td", {colspan: r.columns.length + 3, class: "muted"}, "no sample matches")));
    fill(tableHolder, h("table", {class: "samples"}, h("thead", null, header), body));
    const first = list.length ? state.page * PAGE_SIZE + 1 : 0;
    fill(pager, 
      h("button", {disabled: state.page === 0, onclick: () => { state.page -= 1; render(); }}, "‹ previous"),
      h("span", {id: "sample-count"}, `rows ${count(first)}–${count(Math.min(list.length, (state.page + 1) * PAGE_SIZE))} of ${count(list.length)}`
        + (list.length !== r.samples.length ? ` (filtered from ${count(r.samples.length)})` : "")),
      h("button", {disabled: state.page >= pages - 1, onclick: () => { state.page += 1; render(); }}, "next ›"));
  }

  function toggle(tr, opened, id) {
    if (state.open.has(id)) { state.open.delete(id); tr.classList.remove("open"); opened.remove(); }
    else { state.open.add(id); tr.classList.add("open"); tr.after(opened); }
  }

  trackVisibleWidth(tableHolder);
  resetSort();
  rebuild();
}
