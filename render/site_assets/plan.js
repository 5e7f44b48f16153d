// specc plan view: the planner's search (plan/search.py, plan/serving.py) over the closed
// forms render/plan_site.py exports (data/plan_<spec>.js: call_time, b_max and state_bytes
// of each layout, printed by compiler/lanes/codegen.py) and the serving model's formulas printed
// from plan/formulas.py (data/plan_formulas.js: plan_*). This file composes them (loops over
// layouts, replica counts and prefill chunks; the least batch that satisfies the fixed point)
// and keeps the controls, URL state, table and chart; it does no capacity or time arithmetic
// of its own. Every figure is exact (_R of data/exact.js); floats only for display.
"use strict";

const SPECC_PLAN = (() => {
  const $ = (id) => document.getElementById(id);
  const specs = Object.create(null);     // name -> {data, fns}
  const waiting = Object.create(null);
  const INF = null;                      // a limit with no steady state
  const isInt = (v) => typeof v === "bigint";
  const text = (v) => _R.toString(v);
  const cmp = (a, b) => _R.cmp(a, b);
  function parseExact(s) {               // "123" or "p/q" (the data files' exact values)
    const str = String(s);
    const slash = str.indexOf("/");
    return slash < 0 ? BigInt(str) : _R.q(BigInt(str.slice(0, slash)), BigInt(str.slice(slash + 1)));
  }
  function readNumber(s, what) {        // user input: 20, 2.5, 1/3 (exact, as specc plan reads it)
    const str = String(s).trim();
    if (str.length > 40) throw new Error(`${what} is too long ('${str.slice(0, 20)}…')`);
    let m = /^([0-9]+)\/([0-9]+)$/.exec(str);
    if (m && BigInt(m[2]) !== 0n) return _R.q(BigInt(m[1]), BigInt(m[2]));
    m = /^([0-9]*)(?:\.([0-9]+))?$/.exec(str);
    if (!m || (m[1] === "" && m[2] === undefined)) throw new Error(`cannot read ${what} '${s}' (a number such as 20, 2.5 or 1/3)`);
    const frac = m[2] || "";
    return _R.q(BigInt((m[1] || "0") + frac), 10n ** BigInt(frac.length));
  }
  function toNumber(v) {                  // display and chart positions only
    if (isInt(v)) return Number(v);
    const whole = _R.floor(v);
    const rest = _R.add(v, _R.neg(whole));
    return Number(whole) + Number((rest.n * 10n ** 15n) / rest.d) / 1e15;
  }
  const ms = (v) => `${(toNumber(v) * 1000).toLocaleString("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 })} ms`;
  const gib = (v) => `${(toNumber(v) / 2 ** 30).toLocaleString("en-US", { maximumFractionDigits: 1 })} GiB`;
  const num = (v, digits = 0) => (typeof v === "number" ? v : toNumber(v)).toLocaleString("en-US", { maximumFractionDigits: digits });
  const isqrt = (n) => {                 // ⌊√n⌋ of a BigInt (Newton), the search helper serving.fluctuation uses
    if (n < 2n) return n;
    let x = n, y = (x + 1n) / 2n;
    while (y < x) { x = y; y = (x + n / x) / 2n; }
    return x;
  };
  // the least b >= 1 with ok(b), as serving.LayoutFacts.running_batch finds it (doubling, then
  // bisection); null when there is none up to `limit`
  function leastSatisfying(ok, limit) {
    let lo = 0n, hi = 1n;
    while (!ok(hi)) { lo = hi; hi *= 2n; if (hi > limit) return null; }
    while (hi - lo > 1n) { const mid = (lo + hi) / 2n; if (ok(mid)) hi = mid; else lo = mid; }
    return hi;
  }
  const larger = (a, b) => (a === INF || b === INF ? INF : _R.max(a, b));
  const within = (r) => r !== INF && cmp(r, 1n) <= 0;

  // ------------------------------------------------------------ state and the URL
  const KEYS = ["spec", "rate", "isl", "osl", "arrivals", "chunk", "ttft", "tpot", "devices", "formats", "max_gpus",
    "mode", "prices"];
  const state = { spec: null, rate: "5", isl: "1000", osl: "200", arrivals: "poisson", chunk: "8192", ttft: "1000",
    tpot: "50", devices: null, formats: null, max_gpus: "8", mode: "both", prices: "" };
  function readUrl() {
    const q = new URLSearchParams(location.search);
    for (const k of KEYS) if (q.has(k)) state[k] = q.get(k);
  }
  function writeUrl() {
    const q = new URLSearchParams();
    for (const k of KEYS) if (state[k] !== null && state[k] !== undefined) q.set(k, state[k]);
    const search = "?" + q.toString();
    $("share-link").href = search;
    try { history.replaceState(null, "", search); } catch (e) { /* some file:// hosts refuse; the link works */ }
  }

  // ------------------------------------------------------------ loading the data files
  function register(data, fns) {
    specs[data.name] = { data, fns };
    for (const cb of waiting[data.name] || []) cb();
    delete waiting[data.name];
  }
  function load(name, cb) {
    if (specs[name]) { cb(); return; }
    (waiting[name] = waiting[name] || []).push(cb);
    if (waiting[name].length > 1) return;
    const s = document.createElement("script");
    s.src = `data/plan_${encodeURIComponent(name)}.js`;
    s.onerror = () => fail(`the data file of '${name}' is missing (rebuild with specc site --plan)`);
    document.head.appendChild(s);
  }
  function fail(message) {
    $("plan-errors").textContent = message;
    $("plan-errors").hidden = false;
    document.body.dataset.ready = "true";
  }

  // ------------------------------------------------------------ the search (plan/search.py, exact)
  function readInputs(spec) {
    const d = spec.data;
    const rate = readNumber(state.rate, "the rate");
    if (cmp(rate, 0n) <= 0) throw new Error("the rate must be positive");
    const isl = whole(state.isl, "ISL"), osl = whole(state.osl, "OSL"), chunk = whole(state.chunk, "the chunk budget");
    if (!(isl >= 1n) || !(osl >= 2n)) throw new Error("ISL must be at least 1 and OSL at least 2 (a TPOT needs one decode step)");
    if (!(chunk >= 1n)) throw new Error("the chunk budget must be at least 1 token");
    const longest = plan_final_context(isl, osl);
    if (d.max_context !== null && longest > BigInt(d.max_context)) {
      throw new Error(`ISL + OSL = ${longest} is beyond the spec's max_context ${d.max_context}`);
    }
    const ms = (s, what) => (String(s).trim() === "" ? null : _R.q(readNumber(s, what), 1000n));
    const maxGpus = whole(state.max_gpus, "max GPUs");
    if (!(maxGpus >= 1n)) throw new Error("max GPUs must be at least 1");
    if (maxGpus > MAX_GPUS) throw new Error(`the page searches at most ${MAX_GPUS} GPUs (specc plan --max-gpus takes more)`);
    if ((isl + chunk - 1n) / chunk > MAX_CHUNKS) {
      throw new Error(`the page times at most ${MAX_CHUNKS} prefill chunks per prompt (ISL / chunk budget); specc plan takes more`);
    }
    const prices = Object.create(null), priceText = Object.create(null);
    for (const part of String(state.prices).split(",").map((p) => p.trim()).filter(Boolean)) {
      const [k, v] = part.split("=");
      if (v === undefined) throw new Error(`cannot read the price '${part}' (DEVICE=$/h)`);
      prices[k.trim()] = readNumber(v, "a price");
      priceText[k.trim()] = v.trim();
    }
    const devices = selected("devices", d.devices.map((x) => x.name));
    const priced = Object.keys(prices).length > 0;
    const missing = devices.filter((x) => priced && !(x in prices));
    if (missing.length) throw new Error(`no price for ${missing.join(", ")}`);
    return { rate, isl, osl, chunk, arrivals: state.arrivals, ttft: ms(state.ttft, "the TTFT target"),
      tpot: ms(state.tpot, "the TPOT target"), maxGpus, prices: priced ? prices : null, priceText, devices,
      formats: selected("formats", d.formats.map((f, i) => String(i))).map(Number), mode: state.mode };
  }
  // bounds of the page's own loops (replica counts, prefill chunks), not of the planner
  const MAX_GPUS = 1024n, MAX_CHUNKS = 4096n;
  function whole(s, what) {             // a whole number from the URL or a field (at most 15 digits)
    const str = String(s).trim();
    if (!/^[0-9]{1,15}$/.test(str)) throw new Error(`${what} must be a whole number of at most 15 digits, got '${str.slice(0, 20)}'`);
    return BigInt(str);
  }
  const selected = (key, all) => (state[key] === null ? all : state[key].split(",").filter((x) => all.includes(x)));

  function search(spec, inp) {
    const d = spec.data, fns = spec.fns;
    const maxGain = parseExact(d.max_loop_gain);
    const H = plan_final_context(inp.isl, inp.osl);
    const Hbar = plan_mean_context(inp.isl, inp.osl);
    const steps = plan_decode_steps(inp.osl);
    const chunks = [];
    for (let s = 0n; s < inp.isl; s += inp.chunk) chunks.push([s, plan_chunk_tokens(inp.isl, s, inp.chunk)]);
    const poisson = inp.arrivals === "poisson";
    const device = Object.fromEntries(d.devices.map((x) => [x.name, x]));
    const modes = inp.mode === "both" ? ["aggregated", "disaggregated"] : [inp.mode];
    const out = [], misses = [];
    let index = 0;
    d.layouts.forEach((L) => {
      if (!inp.devices.includes(L.device) || !inp.formats.includes(L.format)) return;
      const per = BigInt(L.gpus);
      if (per > inp.maxGpus) return;
      const dev = device[L.device];
      const nFit = fns[L.fit](H);
      const most = plan_max_instances(inp.maxGpus, per);
      if (cmp(nFit, 1n) < 0) { misses.push({ L, note: "the weights and one request's KV do not fit in the usable memory" }); return; }
      const time = fns[L.time];
      const memo = new Map();
      const td = (b) => { const k = String(b); if (!memo.has(k)) memo.set(k, time(b, Hbar, 1n)); return memo.get(k); };
      let tp = 0n;
      for (const [s, p] of chunks) tp = _R.add(tp, time(1n, s, p));
      const dp = BigInt(L.dp);
      const slope = (b) => {             // serving.LayoutFacts.t_decode_slope
        const w = plan_gain_window(isqrt(plan_fluctuation_radicand(b)), dp);
        let found = _R.max(plan_chord(td(b + dp), td(b), dp), plan_chord(td(b + w), td(b), w));
        if (b >= dp + 1n) found = _R.max(found, plan_chord(td(b), td(b - dp), dp));
        return found;
      };
      const limit = 1n << 20n;
      const batch = (k) => leastSatisfying((b) => plan_batch_holds(b, k, td(b)), limit);
      const common = (row, b) => {
        const kv = fns[L.state](H, plan_reserved_requests(b));
        const weights = parseExact(L.weights), ws = parseExact(dev.workspace);
        row.figures.kv_per_device = kv;
        row.figures.workspace_per_device = ws;
        row.figures.weights_per_device = weights;
        row.figures.requests_that_fit = nFit;
        row.figures.free_per_device = plan_free_memory(parseExact(dev.memory), weights, kv, ws);
        row.figures.throughput = plan_throughput(inp.rate, inp.osl);
        row.figures.throughput_per_gpu = plan_per_gpu(inp.rate, inp.osl, row.gpus);
      };
      const ratio = (v, target) => (target === null ? 0n : plan_ratio(v, target));
      const make = (mode, replicas, prefill) => {
        const gpus = plan_gpus(BigInt(replicas), BigInt(prefill), per);
        const cost = inp.prices ? plan_cost(inp.prices[L.device], gpus) : gpus;
        return { L, mode, replicas, prefill, gpus, cost, index: index++, figures: {}, ratios: {}, batch: null };
      };
      if (modes.includes("aggregated")) {
        for (let r = 1n; r <= most; r++) {
          const row = make("aggregated", r, 0n);
          const lam = plan_rate_per(inp.rate, r);
          const u = plan_prefill_share(lam, tp);
          row.figures.prefill_time = tp;
          if (cmp(u, 1n) >= 0) { row.ratios = { memory: 0n, TPOT: INF, TTFT: INF }; out.push(row); continue; }
          const k = plan_decode_demand(lam, steps, u);
          const b = batch(k);
          if (b === null) { row.ratios = { memory: INF, TPOT: INF, TTFT: INF }; out.push(row); continue; }
          row.batch = b;
          const t = td(b);
          row.figures.decode_loop_gain = plan_loop_gain(lam, steps, slope(b), u);
          const tpot = plan_aggregated_tpot(t, u);
          const busy = plan_busy_share(k, t);
          const s = plan_prefill_service(tp, BigInt(chunks.length), busy, t);
          const rho = plan_load(lam, s);
          row.figures.step_time = t;
          row.figures.tpot = tpot;
          if (cmp(rho, 1n) >= 0) {
            row.ratios = { memory: plan_memory_ratio(b, nFit), TPOT: ratio(tpot, inp.tpot), TTFT: INF };
            out.push(row); continue;
          }
          const wait = poisson ? plan_queue_wait(lam, s, plan_square(s)) : 0n;
          row.figures.ttft = plan_aggregated_ttft(s, wait, rho, busy, t);
          common(row, b);
          row.ratios = { memory: plan_memory_ratio(b, nFit), TPOT: ratio(tpot, inp.tpot),
            TTFT: ratio(row.figures.ttft, inp.ttft), stability: plan_ratio(row.figures.decode_loop_gain, maxGain) };
          out.push(row);
        }
      }
      if (modes.includes("disaggregated") && most >= 2n) {
        if (dev.link === null) {
          misses.push({ L, note: `${L.device}: no disaggregated deployments (${dev.no_link})`, device: true });
        } else {
          const kvTime = plan_kv_transfer(fns[L.state](inp.isl, 1n), parseExact(dev.link));
          const decode = new Map();
          const pool = (n) => {            // a decode pool of n instances
            if (!decode.has(n)) {
              const lam = plan_rate_per(inp.rate, n);
              const b = batch(plan_decode_demand(lam, steps, 0n));
              decode.set(n, b === null ? null : { b, t: td(b), gain: plan_pool_loop_gain(lam, steps, slope(b)) });
            }
            return decode.get(n);
          };
          for (let p = 1n; p < most; p++) {
            for (let n = 1n; n < most && p + n <= most; n++) {
              const row = make("disaggregated", n, p);
              const lamP = plan_rate_per(inp.rate, p);
              const rho = plan_load(lamP, tp);
              row.figures.prefill_time = tp;
              row.figures.kv_transfer = kvTime;
              const dec = pool(n);
              if (dec === null) { row.ratios = { memory: INF, TPOT: INF, TTFT: INF }; out.push(row); continue; }
              row.batch = dec.b;
              row.figures.decode_loop_gain = dec.gain;
              row.figures.step_time = dec.t;
              row.figures.tpot = dec.t;
              if (cmp(rho, 1n) >= 0) {
                row.ratios = { memory: plan_memory_ratio(dec.b, nFit), TPOT: ratio(dec.t, inp.tpot), TTFT: INF };
                out.push(row); continue;
              }
              const wait = poisson ? plan_queue_wait(lamP, tp, plan_square(tp)) : 0n;
              row.figures.ttft = plan_disaggregated_ttft(tp, wait, kvTime);
              common(row, dec.b);
              row.ratios = { memory: plan_memory_ratio(dec.b, nFit), TPOT: ratio(dec.t, inp.tpot),
                TTFT: ratio(row.figures.ttft, inp.ttft), stability: plan_ratio(dec.gain, maxGain) };
              out.push(row);
            }
          }
        }
      }
    });
    for (const row of out) {
      row.worst = Object.values(row.ratios).reduce(larger, 0n);
      row.feasible = Object.values(row.ratios).every(within);
    }
    const byCost = (a, b) => cmp(a.cost, b.cost) || cmp(a.worst, b.worst) || a.index - b.index;
    const feasible = out.filter((r) => r.feasible).sort(byCost);
    const plan = { chosen: feasible[0] || null, front: pareto(feasible).slice(0, 12), best: [], misses, all: out,
      considered: out.length };
    for (const name of inp.devices) {
      const first = feasible.find((r) => r.L.device === name);
      if (first) plan.best.push(first);
    }
    if (!plan.chosen) {
      const finite = out.filter((r) => r.worst !== INF);
      plan.closest = finite.sort((a, b) => cmp(a.worst, b.worst) || a.index - b.index)[0] || null;
    }
    return plan;
  }

  // the limit furthest from its bound (serving.Evaluation.binding; an unbounded one first)
  function bindingLimit(row) {
    let best = null;
    for (const [k, v] of Object.entries(row.ratios)) {
      if (best === null || (best[1] !== INF && (v === INF || cmp(v, best[1]) > 0))) best = [k, v];
    }
    return best[0];
  }

  // plan/search.py _pareto: per cost (ascending) the 2-D front of (TTFT, TPOT), then not dominated
  // by any cheaper member
  function pareto(rows) {
    const front = [];
    for (let i = 0; i < rows.length;) {
      let j = i;
      while (j < rows.length && cmp(rows[j].cost, rows[i].cost) === 0) j++;
      const group = rows.slice(i, j).map((r, k) => [r, k])
        .sort((a, b) => cmp(a[0].figures.ttft, b[0].figures.ttft) || cmp(a[0].figures.tpot, b[0].figures.tpot) || a[1] - b[1])
        .map((x) => x[0]);
      let best = null;
      for (const r of group) {
        const keep = best === null || cmp(r.figures.tpot, best) < 0;
        best = best === null ? r.figures.tpot : _R.min(best, r.figures.tpot);
        if (!keep) continue;
        const dominated = front.some((f) => cmp(f.figures.ttft, r.figures.ttft) <= 0 && cmp(f.figures.tpot, r.figures.tpot) <= 0);
        if (!dominated) front.push(r);
      }
      i = j;
    }
    return front;
  }

  // ------------------------------------------------------------ what the page shows
  function degrees(L) {
    const parts = [["tp", L.tp], ["pp", L.pp], ["dp", L.dp], ["ep", L.ep]].filter(([, v]) => v !== 1).map(([k, v]) => `${k}=${v}`);
    return parts.join(", ") || "tp=1";
  }
  function describe(row) {
    const L = row.L;
    return row.mode === "aggregated" ? `${row.replicas} × (${degrees(L)}) aggregated`
      : `${row.prefill} prefill + ${row.replicas} decode × (${degrees(L)}) disaggregated`;
  }
  function fill(template, values) {
    return template.replace(/\{([A-Z])\}/g, (_, k) => String(values[k]));
  }
  // the specc plan command of these inputs (the page's space: --pp 1), and the exact figures' queries
  function command(spec, inp) {
    const d = spec.data;
    const parts = ["specc plan", d.path, "--rate", state.rate.trim(), "--isl", String(inp.isl), "--osl", String(inp.osl)];
    if (inp.ttft !== null) parts.push("--ttft", `${state.ttft.trim()}ms`);
    if (inp.tpot !== null) parts.push("--tpot", `${state.tpot.trim()}ms`);
    parts.push("--devices", inp.devices.join(","), "--max-gpus", String(inp.maxGpus), "--pp", "1",
      "--formats", `'${inp.formats.map((i) => d.formats[i].cli).join(",")}'`, "--mode", inp.mode,
      "--arrivals", inp.arrivals, "--max-num-batched-tokens", String(inp.chunk));
    for (const name of inp.devices) if (inp.prices) parts.push("--price", `${name}=${inp.priceText[name]}`);
    return parts.join(" ") + " --format json";
  }
  function rowQueries(spec, row, inp) {
    const L = row.L;
    const Hbar = plan_mean_context(inp.isl, inp.osl);
    const H = plan_final_context(inp.isl, inp.osl);
    const beyond = row.batch !== null && cmp(row.batch, row.figures.requests_that_fit) > 0;
    return {
      step_time: row.batch === null ? null : fill(beyond ? L.queries.decode_beyond_fit : L.queries.decode, { H: Hbar, B: row.batch }),
      requests_that_fit: fill(L.queries.fit, { H }),
      weights_per_device: L.queries.weights,
      kv_per_device: row.batch === null ? null : fill(L.queries.state, { H, B: plan_reserved_requests(row.batch) }),
      prefill_time: inp.chunk >= inp.isl ? fill(L.queries.first_chunk, { P: inp.isl }) : null,
    };
  }
  const FIGURES = ["ttft", "tpot", "step_time", "prefill_time", "kv_transfer", "decode_loop_gain", "requests_that_fit",
    "weights_per_device", "kv_per_device", "workspace_per_device", "free_per_device", "throughput", "throughput_per_gpu"];

  function tableRow(spec, row, inp, chosen) {
    const d = spec.data;
    const tr = document.createElement("tr");
    const f = row.figures;
    Object.assign(tr.dataset, { device: row.L.device, mode: row.mode, tp: row.L.tp, pp: row.L.pp, dp: row.L.dp,
      ep: row.L.ep, format: d.formats[row.L.format].name, replicas: String(row.replicas),
      prefillReplicas: String(row.prefill), gpus: text(row.gpus), runningBatch: text(row.batch),
      cost: text(row.cost), chosen: String(row === chosen) });
    const queries = rowQueries(spec, row, inp);
    const cell = (content, fig) => {
      const td = document.createElement("td");
      td.textContent = content;
      if (fig) {
        td.dataset.figure = fig;
        td.dataset.exact = text(f[fig]);
        if (queries[fig]) { td.dataset.query = queries[fig]; td.title = `specc eval '${queries[fig]}'`; }
      }
      return td;
    };
    tr.append(cell(text(row.gpus)), cell(inp.prices ? `$${num(row.cost, 2)}` : "—"),
      cell(`${text(row.gpus)}× ${row.L.device}: ${describe(row)}${row === chosen ? " (chosen)" : ""}`),
      cell(d.formats[row.L.format].name), cell(text(row.batch)), cell(ms(f.ttft), "ttft"), cell(ms(f.tpot), "tpot"),
      cell(num(f.throughput_per_gpu, 1), "throughput_per_gpu"));
    const mem = cell(`weights ${gib(f.weights_per_device)}, KV ${gib(f.kv_per_device)}, workspace ${gib(f.workspace_per_device)}, free ${gib(f.free_per_device)}`);
    tr.append(mem);
    const repro = document.createElement("td");
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = "commands";
    details.append(summary);
    const lines = [command(spec, inp)];
    for (const fig of FIGURES) {
      if (queries[fig]) lines.push(`specc eval ${d.path} '${queries[fig]}'   # ${fig} = ${text(f[fig])}`);
    }
    const pre = document.createElement("pre");
    pre.className = "commands";
    pre.textContent = lines.join("\n");
    details.append(pre);
    repro.append(details);
    tr.append(repro);
    // every exact figure of the row, for readers and tests (the planner's JSON names)
    const hidden = document.createElement("td");
    hidden.hidden = true;
    for (const fig of FIGURES) {
      if (f[fig] === undefined) continue;
      const span = document.createElement("span");
      span.dataset.figure = fig;
      span.dataset.exact = text(f[fig]);
      if (queries[fig]) span.dataset.query = queries[fig];
      hidden.append(span);
    }
    tr.append(hidden);
    return tr;
  }

  function chart(plan, inp) {
    const holder = $("chart");
    holder.textContent = "";
    // the front, and the chosen deployment (outlined) where the front does not hold it
    const points = plan.chosen && !plan.front.includes(plan.chosen) ? [...plan.front, plan.chosen] : plan.front;
    if (!points.length) return;
    const W = 560, Hh = 260, pad = 48;
    const xs = points.map((r) => toNumber(r.cost)), ys = points.map((r) => toNumber(r.figures.throughput_per_gpu));
    const xmax = Math.max(...xs) * 1.1 || 1, ymax = Math.max(...ys) * 1.1 || 1;
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", `0 0 ${W} ${Hh}`);
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", `${inp.prices ? "cost per hour" : "GPUs"} against tokens/s per GPU of the Pareto front`);
    const el = (tag, attrs, content) => {
      const e = document.createElementNS(ns, tag);
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
      if (content !== undefined) e.textContent = content;
      svg.append(e);
      return e;
    };
    el("line", { x1: pad, y1: Hh - pad, x2: W - 10, y2: Hh - pad, stroke: "#5b6475" });
    el("line", { x1: pad, y1: 10, x2: pad, y2: Hh - pad, stroke: "#5b6475" });
    el("text", { x: W / 2, y: Hh - 10, "text-anchor": "middle", "font-size": 12 }, inp.prices ? "cost ($/h)" : "GPUs");
    el("text", { x: 12, y: Hh / 2, "font-size": 12, transform: `rotate(-90 12 ${Hh / 2})`, "text-anchor": "middle" }, "tokens/s per GPU");
    el("text", { x: W - 10, y: Hh - pad + 14, "text-anchor": "end", "font-size": 11 }, num(xmax, 1));
    el("text", { x: pad - 4, y: 16, "text-anchor": "end", "font-size": 11 }, num(ymax, 0));
    const colors = ["#1f5fbf", "#d9822b", "#2e8b57", "#8e6bbf", "#c0392b"];
    const names = inp.devices;
    points.forEach((r, i) => {
      const cx = pad + (xs[i] / xmax) * (W - pad - 10), cy = Hh - pad - (ys[i] / ymax) * (Hh - pad - 10);
      const c = el("circle", { cx, cy, r: r === plan.chosen ? 7 : 5, fill: colors[names.indexOf(r.L.device) % colors.length],
        stroke: r === plan.chosen ? "#000" : "none", "stroke-width": 2 });
      const t = document.createElementNS(ns, "title");
      t.textContent = `${text(r.gpus)}× ${r.L.device}: ${describe(r)}; ${num(r.figures.throughput_per_gpu, 1)} tokens/s per GPU`;
      c.append(t);
    });
    holder.append(svg);
    const legend = document.createElement("p");
    legend.className = "hint";
    names.forEach((n, i) => {
      const mark = document.createElement("span");
      mark.textContent = `● ${n}  `;
      mark.style.color = colors[i % colors.length];
      legend.append(mark);
    });
    legend.append(document.createTextNode("(the chosen deployment is outlined)"));
    holder.append(legend);
  }

  function render() {
    writeUrl();
    const spec = specs[state.spec];
    $("plan-errors").hidden = true;
    for (const id of ["chosen", "notes"]) $(id).textContent = "";
    for (const id of ["chosen-table", "front", "best"]) $(id).querySelector("tbody").textContent = "";
    let inp;
    try {
      inp = readInputs(spec);
    } catch (e) {
      $("plan-title").textContent = `${spec.data.model}: no plan`;
      $("chart").textContent = "";
      fail(e.message);
      return;
    }
    const start = performance.now();
    const plan = search(spec, inp);
    const took = performance.now() - start;
    document.body.dataset.searchMs = String(Math.round(took));
    const d = spec.data;
    $("plan-title").textContent = `${d.model}: ${plan.chosen ? `${text(plan.chosen.gpus)}× ${plan.chosen.L.device}` : "nothing meets the targets"}`;
    const chosen = $("chosen");
    if (plan.chosen) {
      const r = plan.chosen, f = r.figures;
      chosen.dataset.device = r.L.device;
      const card = (label, value, fig) => {
        const div = document.createElement("div");
        div.className = "figure";
        const l = document.createElement("div"); l.className = "label"; l.textContent = label;
        const v = document.createElement("div"); v.className = "value"; v.textContent = value;
        if (fig) { v.dataset.figure = fig; v.dataset.exact = text(f[fig]); }
        div.append(l, v);
        chosen.append(div);
      };
      card("Chosen", `${text(r.gpus)}× ${r.L.device}: ${describe(r)}, ${d.formats[r.L.format].name}`);
      card("TTFT (mean)", ms(f.ttft), "ttft");
      card("TPOT (mean)", ms(f.tpot), "tpot");
      card("Tokens/s per GPU", num(f.throughput_per_gpu, 1), "throughput_per_gpu");
      card("Running batch per decode instance", text(r.batch));
    } else {
      const c = plan.closest;
      const binding = c ? bindingLimit(c) : null;
      fail(`nothing within ${inp.maxGpus} GPUs meets the targets` + (c ? `; the closest, ${text(c.gpus)}× ${c.L.device}: `
        + `${describe(c)}, is bound by ${binding} (${Object.entries(c.ratios).map(([k, v]) => `${k} ${v === INF ? "unbounded" : num(v, 2) + "×"}`).join(", ")} of its bound)` : ""));
    }
    if (plan.chosen) $("chosen-table").querySelector("tbody").append(tableRow(spec, plan.chosen, inp, plan.chosen));
    for (const row of plan.front) $("front").querySelector("tbody").append(tableRow(spec, row, inp, plan.chosen));
    for (const row of plan.best) $("best").querySelector("tbody").append(tableRow(spec, row, inp, plan.chosen));
    chart(plan, inp);
    const notes = $("notes");
    const seen = new Set();
    for (const m of plan.misses) if (m.device && !seen.has(m.note)) { seen.add(m.note); const li = document.createElement("li"); li.textContent = m.note; notes.append(li); }
    for (const m of d.left_out) { const li = document.createElement("li"); li.textContent = `${m.count} layout${m.count > 1 ? "s" : ""} left out, ${m.why}`; notes.append(li); }
    $("space-note").textContent = `Searched ${plan.considered.toLocaleString("en-US")} deployments in ${Math.round(took)} ms: `
      + `tp within a node, pp = 1 only (specc plan also searches pipeline stages)${d.moe ? ", dp 1–8 with ep 1 or tp·dp" : ""}, `
      + `the planner's default formats and devices, memory fraction ${d.memory_fraction}.`;
    document.body.dataset.ready = "true";
  }

  function checkboxes(id, key, items) {
    const holder = $(id);
    holder.textContent = "";
    const chosen = selected(key, items.map((x) => x.value));
    for (const item of items) {
      const label = document.createElement("label");
      label.className = "check";
      const box = document.createElement("input");
      box.type = "checkbox";
      box.name = key;
      box.value = item.value;
      box.checked = chosen.includes(item.value);
      box.addEventListener("change", () => {
        state[key] = Array.from(holder.querySelectorAll("input:checked")).map((b) => b.value).join(",");
        render();
      });
      label.append(box, document.createTextNode(item.label));
      holder.append(label);
    }
  }

  function showSpec() {
    const spec = specs[state.spec];
    const d = spec.data;
    checkboxes("devices", "devices", d.devices.map((x) => ({ value: x.name, label: x.name + (x.link === null ? " (no scale-out link)" : "") })));
    checkboxes("formats", "formats", d.formats.map((f, i) => ({ value: String(i), label: f.name })));
    render();
  }

  function start() {
    if (typeof SPECC_PLAN_SITE === "undefined" || typeof plan_ratio === "undefined") {
      $("plan-title").textContent = "No plan data";
      fail("this site was built without the plan view: run specc site --plan");
      return;
    }
    readUrl();
    const names = SPECC_PLAN_SITE.specs.map((s) => s.name);
    if (!names.includes(state.spec)) state.spec = names[0];
    const select = $("spec");
    for (const s of SPECC_PLAN_SITE.specs) {
      const o = document.createElement("option");
      o.value = s.name; o.textContent = `${s.model} (${s.name})`;
      select.append(o);
    }
    select.value = state.spec;
    select.addEventListener("change", () => {
      state.spec = select.value; state.devices = null; state.formats = null;
      load(state.spec, showSpec);
    });
    for (const key of ["rate", "isl", "osl", "arrivals", "chunk", "ttft", "tpot", "max_gpus", "mode", "prices"]) {
      const input = $(key);
      input.value = state[key];
      input.addEventListener("change", () => { state[key] = input.value; render(); });
    }
    load(state.spec, showSpec);
  }

  document.addEventListener("DOMContentLoaded", start);
  return { register, search, state, specs };
})();
