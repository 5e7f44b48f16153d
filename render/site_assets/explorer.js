// specc explorer: evaluates the exported closed forms (data/<spec>.js, printed by
// compiler/lanes/codegen.py) with the exact arithmetic of data/exact.js (_R: BigInt
// integers and reduced {n, d} rationals). Floats appear only in the approximate
// displays and in chart coordinates. Every figure element carries data-query (the
// specc query it shows) and data-value (its exact value as `specc eval --json`
// prints it: an integer or "p/q").
"use strict";

const SPECC = (() => {
  const site = SPECC_SITE;
  // keyed by spec name: no prototype, so a spec named __proto__ or constructor is just a name
  const loaded = Object.create(null);       // spec name -> {data, fns}
  const waiting = Object.create(null);      // spec name -> callbacks
  const $ = (id) => document.getElementById(id);
  const SCENARIO = ["B", "S", "P", "G", "H"];
  const MINIMA = { B: 1n, S: 0n, P: 1n, G: 1n, H: 0n };
  const MAX_DIGITS = 15;   // a URL's scenario value: beyond 10^15 tokens or requests is no scenario, only work
  const DEFAULTS = { B: 1n, S: 0n, P: 8192n, G: 1n, H: 8192n };
  // scenario values the URL or the reader set: every other one follows the spec's limits
  const chosen = new Set();
  // the defaults within a spec's maximum context for every scenario value nobody chose:
  // P (a prefill of P tokens) at most the maximum; H below it, since a decode step at H
  // reaches context H + 1: the largest power of two under the maximum (Llama-2's 4,096
  // tokens: P 4,096 and H 2,048, not an extrapolated 8,192)
  function fitDefaults(spec) {
    const top = spec.max_context ? BigInt(spec.max_context) : null;
    if (!chosen.has("P")) state.P = top !== null && top < DEFAULTS.P ? top : DEFAULTS.P;
    if (!chosen.has("H")) {
      let h = DEFAULTS.H;
      while (top !== null && h >= top && h > 1n) h /= 2n;
      state.H = h;
    }
  }

  // ------------------------------------------------------------ exact values
  const isInt = (v) => typeof v === "bigint";
  const exactText = (v) => _R.toString(v);
  function parseExact(text) {           // "123" or "p/q", as the site data stores exact values
    const s = String(text);
    const slash = s.indexOf("/");
    return slash < 0 ? BigInt(s) : _R.q(BigInt(s.slice(0, slash)), BigInt(s.slice(slash + 1)));
  }
  function toNumber(v) {                // for display and chart positions only
    if (isInt(v)) return Number(v);
    const whole = _R.floor(v);
    const rest = _R.add(v, _R.neg(whole));
    return Number(whole) + Number((rest.n * 10n ** 15n) / rest.d) / 1e15;
  }
  // number formats made once (toLocaleString builds one per call: most of a repaint's display time)
  const formats = new Map();
  function localized(x, options) {
    const key = options ? JSON.stringify(options) : "";
    if (!formats.has(key)) formats.set(key, new Intl.NumberFormat("en-US", options));
    return formats.get(key).format(x);
  }
  const separated = (n) => localized(n);

  // "2 GiB", "24GB", "1.5 TB", "1000" (bytes) -> {value, text}, with the unit words of dsl/units.py
  function parseBytes(text) {
    const m = /^\s*([0-9]+)(?:\.([0-9]+))?\s*([A-Za-z]*)\s*$/.exec(text);
    if (!m) throw new Error(`'${text}' is not an amount of memory (e.g. 2 GiB, 24 GB, 0 B)`);
    const word = m[3] || "B";
    if (!(word in site.byte_units)) {
      throw new Error(`'${word}' is not a byte unit (use ${Object.keys(site.byte_units).join(", ")})`);
    }
    const frac = m[2] || "";
    const number = _R.q(BigInt(m[1] + frac), 10n ** BigInt(frac.length));
    const value = _R.mul(number, parseExact(site.byte_units[word]));
    return { value, text: `${m[1]}${frac ? "." + frac : ""} ${word}` };
  }

  // ------------------------------------------------------------ human display
  const BINARY = [["PiB", 2n ** 50n], ["TiB", 2n ** 40n], ["GiB", 2n ** 30n], ["MiB", 2n ** 20n], ["KiB", 2n ** 10n]];
  const DECIMAL = [["P", 1e15], ["T", 1e12], ["G", 1e9], ["M", 1e6], ["k", 1e3]];
  const WORDS = [["trillion", 1e12], ["billion", 1e9], ["million", 1e6]];
  const round3 = (x) => localized(x, { maximumSignificantDigits: 4 });

  function approx(v, unit) {
    const x = toNumber(v);
    const ax = Math.abs(x);
    if (unit === "bytes") {
      for (const [name, size] of BINARY) if (ax >= Number(size)) return `${round3(x / Number(size))} ${name}`;
      return "";
    }
    if (unit === "FLOPs") {
      for (const [prefix, size] of DECIMAL) if (ax >= size) return `${round3(x / size)} ${prefix}FLOPs`;
      return "";
    }
    if (unit === "parameters") {
      for (const [word, size] of WORDS) if (ax >= size) return `${round3(x / size)} ${word}`;
    }
    return "";
  }

  // a time in the largest unit in which it is at least 1 (s, ms, µs, ns), as dsl/human.py prints it
  const TIME_UNITS = [["s", 1], ["ms", 1e-3], ["µs", 1e-6], ["ns", 1e-9]];
  function timeUnit(x) {
    for (const [label, size] of TIME_UNITS) if (Math.abs(x) >= size) return [label, size];
    return TIME_UNITS[TIME_UNITS.length - 1];
  }
  function showSeconds(x, digits) {
    if (x === 0) return "0 s";
    const [label, size] = timeUnit(x);
    return `${localized(x / size, { maximumSignificantDigits: digits })} ${label}`;
  }

  // times in s/ms/µs, rates as tokens/s: the exact value stays in data-value and the note
  function showRate(v, unit) {
    const x = toNumber(v);
    const main = unit === "seconds" ? `≈ ${showSeconds(x, 5)}`
      : `≈ ${localized(x, { maximumFractionDigits: x >= 100 ? 1 : 4 })} tokens/s`;
    const exact = isInt(v) ? separated(v) : `${v.n}/${v.d}`;
    return { main, note: `exactly ${exact} ${unit === "seconds" ? "seconds" : "tokens per second"}` };
  }

  function showValue(v, unit) {
    if (unit === "seconds" || unit === "tokens per second") return showRate(v, unit);
    const words = { bytes: "bytes", FLOPs: "FLOPs", parameters: "parameters", "bytes per token": "bytes per token",
                    requests: "requests", tokens: "tokens" }[unit] || unit;
    if (isInt(v)) {
      const near = approx(v, unit);
      return { main: `${separated(v)} ${words}`, note: near ? `≈ ${near}` : "" };
    }
    const near = approx(v, unit);
    return { main: `≈ ${localized(toNumber(v), { maximumFractionDigits: 4 })} ${words}`,
             note: `exactly ${v.n}/${v.d}${near ? ` (≈ ${near})` : ""}` };
  }

  // ------------------------------------------------------------ state and the URL
  const state = { spec: null, device: null, memory: "", workspace: "0 B", format: null, options: {},
                  weights: "", kv: "", compute: "",
                  B: DEFAULTS.B, S: DEFAULTS.S, P: DEFAULTS.P, G: DEFAULTS.G, H: DEFAULTS.H,
                  tp: 1n, pp: 1n, ep: 1n, dp: 1n, mfu: "1", mbu: "1", overlap: false };
  const DEGREES = ["tp", "pp", "ep", "dp"];
  const RATES = ["mfu", "mbu"];
  // the deployment-format knobs (empty: what the spec's format names): weights= and kv= choose
  // exported closed forms, compute= which of the device's peaks the time formulas are given
  const KNOBS = ["weights", "kv", "compute"];
  const knobChoices = (key) => (key === "compute" ? site.knobs.compute : site.knobs[key].map((k) => k.name));

  // a fraction of the peak in (0, 1]: "0.8", "1", "1/3" -> exact rational (the engine's mfu=/mbu=)
  function parseFraction(key, text) {
    const s = String(text).trim();
    const m = /^([0-9]+)(?:\.([0-9]+))?$/.exec(s) || /^([0-9]+)\/([1-9][0-9]*)$/.exec(s);
    let value = null;
    if (m && s.includes("/")) value = _R.q(BigInt(m[1]), BigInt(m[2]));
    else if (m) value = _R.q(BigInt(m[1] + (m[2] || "")), 10n ** BigInt((m[2] || "").length));
    if (value === null || _R.cmp(value, 0n) <= 0 || _R.cmp(value, 1n) > 0) {
      throw new Error(`${key}=${s} is not a fraction of the peak in (0, 1] (e.g. ${key}=0.5)`);
    }
    return value;
  }
  const problems = [];

  function readURL() {
    const q = new URLSearchParams(location.search);
    const names = site.specs.map((s) => s.name);
    state.spec = q.get("spec") && names.includes(q.get("spec")) ? q.get("spec") : names[0];
    if (q.get("spec") && !names.includes(q.get("spec"))) problems.push(`no spec '${q.get("spec")}' in this site`);
    const devices = site.devices.map((d) => d.name);
    state.device = q.get("device") && devices.includes(q.get("device")) ? q.get("device") : devices[0];
    if (q.get("device") && !devices.includes(q.get("device"))) problems.push(`no device '${q.get("device")}'`);
    state.memory = q.get("memory") || "";
    state.workspace = q.get("workspace") || "0 B";
    for (const key of SCENARIO) {
      const raw = q.get(key);
      if (raw === null) continue;
      if (/^[0-9]+$/.test(raw) && raw.length > MAX_DIGITS) problems.push(`${key}=${raw.slice(0, 24)}… has more than ${MAX_DIGITS} digits`);
      else if (/^[0-9]+$/.test(raw) && BigInt(raw) >= MINIMA[key]) { state[key] = BigInt(raw); chosen.add(key); }
      else problems.push(`${key}=${raw.slice(0, 40)} is not an integer ≥ ${MINIMA[key]}`);
    }
    for (const key of DEGREES) {
      const raw = q.get(key);
      if (raw === null) continue;
      const offered = site.deployment_grid[key];
      const ok = /^[0-9]+$/.test(raw) && raw.length <= MAX_DIGITS && BigInt(raw) >= 1n && (!offered || offered.map(String).includes(raw));
      if (ok && (site.deployment || raw === "1")) state[key] = BigInt(raw);
      else if (!site.deployment) problems.push(`this site has no per-device figures (${key}=${raw})`);
      else problems.push(`${key}=${raw} is not offered (${offered ? offered.join(", ") : "an integer ≥ 1"})`);
    }
    for (const key of RATES) {
      const raw = q.get(key);
      if (raw === null) continue;
      try { parseFraction(key, raw); state[key] = raw.trim(); } catch (e) { problems.push(e.message); }
    }
    const overlap = q.get("overlap");
    if (overlap !== null) {
      if (overlap === "true" || overlap === "false") state.overlap = overlap === "true";
      else problems.push(`overlap=${overlap} is not true or false`);
    }
    for (const key of KNOBS) {
      const raw = q.get(key);
      if (raw === null || raw === "") continue;
      if (knobChoices(key).includes(raw)) state[key] = raw;
      else problems.push(`${key}=${raw.slice(0, 40)} is not offered (${knobChoices(key).join(", ")})`);
    }
    state.format = q.get("format");
    state.urlOptions = Object.create(null);
    for (const [k, v] of q.entries()) state.urlOptions[k] = v;
  }

  let urlTimer = null;
  function writeURL() {
    const q = new URLSearchParams();
    q.set("spec", state.spec);
    const spec = loaded[state.spec] && loaded[state.spec].data;
    if (spec) {
      for (const o of spec.options) if (state.options[o.name] !== o.default) q.set(o.name, state.options[o.name]);
      if (state.format !== defaultFormat(spec)) q.set("format", state.format);
    }
    for (const key of KNOBS) if (state[key]) q.set(key, state[key]);
    q.set("device", state.device);
    if (state.memory) q.set("memory", state.memory);
    q.set("workspace", state.workspace);
    for (const key of SCENARIO) q.set(key, state[key].toString());
    if (site.deployment) for (const key of DEGREES) q.set(key, state[key].toString());
    for (const key of RATES) q.set(key, state[key]);
    if (state.overlap) q.set("overlap", "true");
    const search = "?" + q.toString();
    $("share-link").href = search;
    // the address bar after the repaint: replaceState costs several milliseconds (more on file://), and
    // controls that move quickly need only the last one
    clearTimeout(urlTimer);
    urlTimer = setTimeout(() => {
      try { history.replaceState(null, "", search); } catch (e) { /* some file:// hosts refuse; the link still works */ }
    }, 0);
  }

  const defaultFormat = (spec) => (spec.formats.find((f) => f.default) || spec.formats[0]).name;

  // ------------------------------------------------------------ loading spec data
  function register(data, fns) {
    loaded[data.name] = { data, fns };
    (waiting[data.name] || []).forEach((cb) => cb());
    delete waiting[data.name];
  }

  function load(name, cb) {
    if (loaded[name]) { cb(); return; }
    if (waiting[name]) { waiting[name].push(cb); return; }
    waiting[name] = [cb];
    const tag = document.createElement("script");
    tag.src = `data/${name}.js`;
    tag.onerror = () => showProblems([`could not load data/${name}.js`]);
    document.head.appendChild(tag);
  }

  // ------------------------------------------------------------ figures
  // why the export has no closed form for a slot (the engine's message), or undefined
  const reason = (spec, key) => (key in spec.unavailable ? spec.messages[spec.unavailable[key]] : undefined);
  const variantKey = (options) => Object.keys(options).sort().map((k) => `${k}=${options[k]}`).join("&");

  function extras(spec, fig) {
    const parts = [];
    for (const o of spec.options) if (state.options[o.name] !== o.default) parts.push(`${o.name}=${state.options[o.name]}`);
    if (fig.formatted && state.format !== defaultFormat(spec)) parts.push(`format=${state.format}`);
    return parts.concat(knobParts(fig.query));
  }
  // the knobs a query declares (site.query_params) that the page sets: in its text, and (weights=,
  // kv=) in the key of the closed forms the export printed for them
  const declares = (query, name) => (site.query_params[query] || []).includes(name);
  const knobParts = (query) => KNOBS.filter((k) => state[k] && declares(query, k)).map((k) => `${k}=${state[k]}`);
  function knobsOf(query) {
    const out = {};
    for (const k of ["weights", "kv"]) if (state[k] && declares(query, k)) out[k] = state[k];
    return out;
  }
  const keyOf = (query) => variantKey({ ...state.options, ...knobsOf(query) });
  const knobbed = (query) => Object.keys(knobsOf(query)).length > 0;
  const knobsNotExported = (spec) => `not exported: weights= and kv= are exported for ${spec.name}'s default ` +
    `options and its default format (${defaultFormat(spec)}) on one device; ask specc eval`;

  // whether a figure's query passes the spec's maximum context: the context it checks is a
  // printed function of its scenario arguments (SPECC_CONTEXT, data/exact.js)
  const beyond = (spec, context) => spec.max_context !== null && _R.cmp(context, BigInt(spec.max_context)) > 0;
  function beyondFor(spec, id, args) {
    if (!(id in SPECC_CONTEXT)) return false;
    const v = (k) => (args[k] === undefined ? 0n : args[k]);
    return beyond(spec, SPECC_CONTEXT[id](v("B"), v("S"), v("P"), v("G"), v("H")));
  }

  // one figure at the current state: {fig, value, query, extrapolated} or {fig, error}
  function evaluate(entry, fig, at) {     // at: scenario values that replace the page state's
    const values = { ...state, ...(at || {}) };
    const spec = entry.data;
    const key = keyOf(fig.query);
    const table = spec.variants[key];
    const slot = fig.formatted ? `${fig.id}|${state.format}` : fig.id;
    const args = { B: 0n, S: 0n, P: 0n, G: 0n, H: 0n };
    for (const [arg, src] of fig.args) args[arg] = typeof src === "string" ? values[src] : BigInt(src);
    const extrapolated = beyondFor(spec, fig.id, args);
    const parts = fig.args.map(([arg, src]) => `${arg}=${typeof src === "string" ? args[arg] : src}`);
    parts.push(...extras(spec, fig));
    if (extrapolated) parts.push("extrapolate=true");
    const query = `${fig.query}(${parts.join(", ")})`;
    if (!table || !(slot in table)) {
      return { fig, query, error: knobbed(fig.query) ? knobsNotExported(spec) : `the option combination ${key} is not exported` };
    }
    const index = table[slot];
    if (index === null || index === undefined) {
      return { fig, query, error: reason(spec, `${key}#${slot}`) || "not available for this spec" };
    }
    try {
      return { fig, query, extrapolated, value: entry.fns[index](args.B, args.S, args.P, args.G, args.H) };
    } catch (e) {
      return { fig, query, error: e.message };
    }
  }

  function memoryOf(device) {
    let value = parseExact(device.memory);
    let query = "";
    if (state.memory && device.name === state.device) {     // memory= overrides the selected device only
      const override = parseBytes(state.memory);
      if (_R.cmp(override.value, value) !== 0) query = `, memory=${override.text}`;
      value = override.value;
    }
    return { value, query };
  }

  // ------------------------------------------------------------ deployment and capacity
  // A layout as the data files key it (tp, pp, dp, ep) and as query text names it (tp, pp, ep, dp).
  const deployment = () => {
    const d = { tp: state.tp, pp: state.pp, ep: state.ep, dp: state.dp };
    d.trivial = d.tp === 1n && d.pp === 1n && d.ep === 1n && d.dp === 1n;
    d.key = `tp=${d.tp}&pp=${d.pp}&dp=${d.dp}&ep=${d.ep}`;
    d.stageKey = `tp=${d.tp}&dp=${d.dp}&ep=${d.ep}`;       // what a call's roofline rows depend on
    d.args = ["tp", "pp", "ep", "dp"].filter((k) => d[k] !== 1n).map((k) => `${k}=${d[k]}`);
    return d;
  };
  const isDefaultOptions = (spec) => spec.options.every((o) => state.options[o.name] === o.default);

  // a per-device figure at the current layout (exported for the default options)
  function evaluateDeployed(entry, id, at) {
    const spec = entry.data;
    const fig = site.deployed_figures.find((f) => f.id === id);
    const dep = deployment();
    const values = { ...state, ...(at || {}) };
    const args = fig.args.map(([arg, src]) => [arg, typeof src === "string" ? values[src] : BigInt(src)]);
    const extrapolated = beyondFor(spec, fig.id, Object.fromEntries(args));
    const parts = args.map(([arg, v]) => `${arg}=${v}`);
    parts.push(...dep.args, "per_device=true");
    if (fig.formatted && state.format !== defaultFormat(spec)) parts.push(`format=${state.format}`);
    parts.push(...knobParts(fig.query));
    if (extrapolated) parts.push("extrapolate=true");
    const query = `${fig.query}(${parts.join(", ")})`;
    if (!isDefaultOptions(spec)) {
      return { fig, query, error: "per-device figures are exported for the spec's default options" };
    }
    const knobs = variantKey(knobsOf(fig.query));
    const slot = (knobs ? `${knobs}#` : "") + (fig.formatted ? `${fig.id}|${state.format}|${dep.key}` : `${fig.id}|${dep.key}`);
    const index = spec.deployed[slot];
    if (index === undefined && knobs) return { fig, query, error: knobsNotExported(spec) };
    if (index === null || index === undefined) {
      return { fig, query, error: reason(spec, `${variantKey(state.options)}#${slot}`) || "not exported for this deployment" };
    }
    const v = Object.fromEntries(SCENARIO.map((k) => [k, 0n]));
    for (const [arg, value] of args) v[arg] = value;
    try {
      return { fig, query, extrapolated, value: entry.fns[index](v.B, v.S, v.P, v.G, v.H) };
    } catch (e) {
      return { fig, query, error: e.message };
    }
  }

  // What one device holds, for the memory bars: its weights, one request's state at H and
  // how many of the B requests it serves (B spread over the dp groups).
  function budget(entry, results) {
    const dep = deployment();
    const stateFig = site.figures.find((f) => f.id === "state_request");
    const b = {
      dep, perDevice: specc_bar_requests(state.B, dep.dp),
      weights: dep.trivial ? results.weight_bytes : evaluateDeployed(entry, "weights_device"),
      one: dep.trivial ? evaluate(entry, stateFig) : evaluateDeployed(entry, "state_device"),
    };
    return b;
  }

  // A formula the export printed for this spec (capacity, fit, time): {fn}, {error} or {missing}.
  function formula(entry, slot) {
    const index = entry.data.forms[slot];
    if (index === undefined) return { missing: true };
    if (index === null) return { error: reason(entry.data, slot) || "not available for this spec" };
    return { fn: entry.fns[index] };
  }
  const notExported = (spec, query) => (query && knobbed(query) ? knobsNotExported(spec)
    : isDefaultOptions(spec) ? "not exported for this deployment; ask specc eval"
      : "with options other than the defaults the page answers for one device; ask specc eval");

  // The arguments of every printed formula (site.formula_args): the scenario, then the device's
  // memory, workspace, rates, mfu, mbu, links and collective latencies, exact.
  // (the device's part is parsed once per repaint: charts call the formulas at many points)
  // (kept across repaints, keyed by what they are parsed from: most control changes leave them as they are)
  let deviceArgsMemo = new Map();
  const SCENARIO_AT = new Map(SCENARIO.map((k) => [k, site.formula_args.indexOf(k)]));
  function formulaArgs(device, values) {
    // memory= overrides the selected device only: whether this one is selected is part of the key
    const key = [device.name, device.name === state.device, state.spec, state.format, state.weights, state.compute,
                 state.memory, state.workspace, state.mfu, state.mbu].join("|");
    let vector = deviceArgsMemo.get(key);
    if (vector === undefined) {
      if (deviceArgsMemo.size > 256) deviceArgsMemo = new Map();
      const v = deviceArgs(device);
      vector = site.formula_args.map((name) => v[name]);
      deviceArgsMemo.set(key, vector);
    }
    const out = vector.slice();
    for (const [k, i] of SCENARIO_AT) out[i] = values[k];
    return out;
  }
  // The math type of the time figures (q_time._compute_dtype): compute=, else the weight scheme's
  // (weights=, or the one the format names) as the engine resolves it on this device (the device
  // table's compute_for), else the device's default rate. {dtype, note, error}
  function computeOf(device) {
    if (state.compute) {
      return device.peaks[state.compute] === undefined
        ? { error: `device '${device.name}' gives no ${state.compute} rate (compute=${state.compute})` }
        : { dtype: state.compute, note: `compute ${state.compute}` };
    }
    const spec = loaded[state.spec].data;
    const fmt = spec.formats.find((f) => f.name === state.format) || {};
    const scheme = state.weights ? site.knobs.weights.find((w) => w.name === state.weights)
      : fmt.scheme ? { name: fmt.scheme, compute: fmt.scheme_compute } : null;
    if (!scheme) return { dtype: null, note: "" };
    const dtype = device.compute_for[scheme.compute];
    return { dtype, note: `compute ${dtype || "default"}: weights=${scheme.name}` };
  }
  function deviceArgs(device) {
    const math = computeOf(device);
    const peak = math.dtype ? device.peaks[math.dtype] : device.flops;
    const v = {
      d_memory: memoryOf(device).value, d_workspace: parseBytes(state.workspace).value,
      d_flops: peak === null || peak === undefined ? 1n : parseExact(peak),
      d_bandwidth: device.bandwidth === null ? 1n : parseExact(device.bandwidth),
      d_mfu: parseFraction("mfu", state.mfu), d_mbu: parseFraction("mbu", state.mbu),
      d_up: device.scale_up === null ? 1n : parseExact(device.scale_up),
      d_out: device.scale_out === null ? 1n : parseExact(device.scale_out),
    };
    for (const kind of site.collective_kinds) {
      v[`d_lu_${kind}`] = kind in device.latency ? parseExact(device.latency[kind]) : 0n;
      v[`d_lo_${kind}`] = kind in device.scale_out_latency ? parseExact(device.scale_out_latency[kind]) : 0n;
    }
    return v;
  }

  function capacityParts(entry, device, head, name) {
    const spec = entry.data;
    const workspace = parseBytes(state.workspace), memory = memoryOf(device);
    const parts = [`device=${device.name}`, ...head, `workspace=${workspace.text}`, ...deployment().args];
    if (state.format !== defaultFormat(spec)) parts.push(`format=${state.format}`);
    for (const o of spec.options) if (state.options[o.name] !== o.default) parts.push(`${o.name}=${state.options[o.name]}`);
    parts.push(...knobParts(name));
    return { parts, workspace, memory };
  }

  // b_max: the engine's q_b_max printed with memory and workspace as symbols
  function capacity(entry, device) {
    const fig = { id: "b_max", label: `Requests that fit (b_max) on ${device.display_name}`, unit: "requests",
                  doc: "requests of context H that fit beside the weights and the workspace" };
    const spec = entry.data;
    let c;
    try { c = capacityParts(entry, device, [`H=${state.H}`], "b_max"); } catch (e) { return { fig, error: e.message }; }
    const extrapolated = beyondFor(spec, "b_max", { H: state.H });
    if (extrapolated) c.parts.push("extrapolate=true");
    const query = `b_max(${c.parts.join(", ")}${c.memory.query})`;
    const f = formula(entry, `${keyOf("b_max")}#b_max|${state.format}|${deployment().key}`);
    if (!f.fn) return { fig, query, error: f.error || notExported(spec, "b_max") };
    try {
      return { fig, query, extrapolated, value: f.fn(...formulaArgs(device, state)) };
    } catch (e) {
      return { fig, query, error: e.message };
    }
  }

  // h_max: the longest context whose printed shortfall (q_capacity's fit rule for B requests)
  // is not positive, by one generic search, at most the spec's maximum context (as the engine
  // answers without extrapolate=true)
  const H_LIMIT = 2n ** 48n;
  function longest(fits) {              // the largest h >= 0 with fits(h), fits monotone; null: unbounded
    if (!fits(0n)) return 0n;
    if (fits(H_LIMIT)) return null;
    let lo = 0n, hi = 1n;
    while (fits(hi)) { lo = hi; hi *= 2n; }
    while (hi - lo > 1n) { const mid = (lo + hi) / 2n; if (fits(mid)) lo = mid; else hi = mid; }
    return lo;
  }
  function contextCapacity(entry, device) {
    const fig = { id: "h_max", label: `Longest context for ${separated(state.B)} request${state.B === 1n ? "" : "s"} (h_max)`,
                  unit: "tokens", doc: "the longest context at which B requests fit beside the weights and the workspace" };
    let c;
    try { c = capacityParts(entry, device, [`B=${state.B}`], "h_max"); } catch (e) { return { fig, error: e.message }; }
    const spec = entry.data;
    const query = `h_max(${c.parts.join(", ")}${c.memory.query})`;
    const vkey = keyOf("h_max");
    const bounded = formula(entry, `${vkey}#b_max|${state.format}|${deployment().key}`);    // says why when no state
    const short = formula(entry, `${vkey}#short|${state.format}|${deployment().key}`);
    if (!bounded.fn || !short.fn) return { fig, query, error: bounded.error || short.error || notExported(spec, "h_max") };
    try {
      const lo = longest((h) => _R.cmp(short.fn(...formulaArgs(device, { ...state, H: h })), 0n) <= 0);
      if (lo === null) return { fig, query, error: "the state does not bind: any context fits" };
      return { fig, query, value: spec.max_context === null ? lo : specc_at_most(lo, BigInt(spec.max_context)) };
    } catch (e) {
      return { fig, query, error: e.message };
    }
  }

  // ------------------------------------------------------------ time (q_time.py, printed)
  // ttft, tpot and throughput call formulas printed from the engine's roofline rows and
  // collectives (render/site.py time_forms): the step's compute, its collectives on the
  // device's node size, their sum (or larger, overlap=true) by specc_step_seconds, and
  // B / seconds by specc_per_second. A deployment that does not fit gets no time: the
  // printed fit rule's shortfall is shown instead, as the engine refuses the query.
  function evaluateTime(entry, fig, device, at) {
    const spec = entry.data;
    const values = { ...state, ...(at || {}) };
    const args = Object.fromEntries(fig.args.map(([arg, src]) => [arg, typeof src === "string" ? values[src] : BigInt(src)]));
    const extrapolated = beyondFor(spec, fig.id, args);
    const dep = deployment();
    const parts = fig.args.map(([arg]) => `${arg}=${args[arg]}`);
    parts.push(`device=${device.name}`, ...dep.args);
    for (const key of RATES) if (state[key] !== "1") parts.push(`${key}=${state[key]}`);
    if (state.overlap) parts.push("overlap=true");
    let memory;
    try {
      if (state.workspace !== "0 B") parts.push(`workspace=${parseBytes(state.workspace).text}`);
      memory = memoryOf(device);
    } catch (e) { return { fig, error: e.message }; }
    parts.push(...extras(spec, fig));
    if (memory.query) parts.push(memory.query.slice(2));
    if (extrapolated) parts.push("extrapolate=true");
    const query = `${fig.query}(${parts.join(", ")})`;
    const step = fig.id === "ttft" ? "ttft" : "tpot";
    const vkey = variantKey(state.options), kkey = keyOf(fig.query);     // collectives take no knob
    const node = device.gpus_per_node === null ? "none" : String(device.gpus_per_node);
    const commSlot = `${vkey}#comm_${step}|${dep.key}|${node}`;
    const compute = formula(entry, `${kkey}#compute_${step}|${state.format}|${dep.stageKey}`);
    const comm = formula(entry, commSlot);
    const short = formula(entry, `${kkey}#short_${step}|${state.format}|${dep.key}`);
    const problem = [compute, comm, short].find((f) => !f.fn);
    if (problem) return { fig, query, error: problem.error || notExported(spec, fig.query) };
    const math = computeOf(device);
    if (math.error) return { fig, query, error: math.error };
    try {
      const vector = formulaArgs(device, values);
      const shortfall = short.fn(...vector);
      if (_R.cmp(shortfall, 0n) > 0) {
        return { fig, query, short: shortfall,
                 error: `the deployment does not fit: the most loaded ${device.name} is ${separated(shortfall)} B short ` +
                        "(weights, workspace and its requests' state); specc eval gives no time (ignore_fit=true asks anyway)" };
      }
      if (math.dtype === null && device.flops === null) throw new Error(`device '${device.name}' has no bf16 or fp16 rate`);
      if (device.bandwidth === null) throw new Error(`device '${device.name}' gives no 'bandwidth:'`);
      const needs = (spec.needs[commSlot] || "").split(",");
      if (needs.includes("up") && device.scale_up === null) {
        throw new Error("this deployment communicates inside a node, and the device gives no scale-up link");
      }
      if (needs.includes("out") && device.scale_out === null) {
        throw new Error("this deployment spans nodes, and the device gives no scale-out link");
      }
      const seconds = specc_step_seconds(compute.fn(...vector), comm.fn(...vector), state.overlap ? 1n : 0n);
      return { fig, query, extrapolated, compute: math.note,
               value: fig.id === "throughput" ? specc_per_second(args.B, seconds) : seconds };
    } catch (e) {
      return { fig, query, error: e.message };
    }
  }

  function figureElement(result, compact) {
    const el = document.createElement(compact ? "span" : "div");
    el.className = compact ? "figure inline" : "figure";
    el.dataset.figure = result.fig.id;
    if (result.query) el.dataset.query = result.query;
    const add = (tag, cls, text) => {
      const child = document.createElement(tag);
      child.className = cls;
      child.textContent = text;
      el.appendChild(child);
      return child;
    };
    if (!compact) add("div", "label", result.fig.label).title = result.fig.doc || "";
    if (result.short !== undefined) el.dataset.short = exactText(result.short);   // bytes missing to fit
    if (result.error) {
      add(compact ? "span" : "div", "value", result.short !== undefined ? "does not fit" : "not available");
      if (!compact) add("div", "note", result.error);
      el.classList.add("unavailable");
      el.title = result.error;
    } else {
      el.dataset.value = exactText(result.value);
      const shown = showValue(result.value, result.fig.unit);
      add(compact ? "span" : "div", "value", shown.main);
      if (shown.note && !compact) add("div", "note", shown.note);
      if (result.compute && !compact) add("div", "note", result.compute);
      if (result.extrapolated) {
        el.dataset.extrapolated = "true";
        add(compact ? "span" : "div", "note", " extrapolated beyond the spec's maximum context");
      }
    }
    if (!compact && result.query) add("code", "query", result.query);
    return el;
  }

  // ------------------------------------------------------------ the memory bars
  function bars(entry, plan) {
    const box = $("bars");
    box.textContent = "";
    if (plan.weights.error) return;
    const batch = plan.one.error ? plan.one : { value: specc_bar_state(plan.perDevice, plan.one.value) };
    let workspace;
    try { workspace = parseBytes(state.workspace).value; } catch (e) { return; }
    const rows = site.devices.map((device) => {
      let memory;
      try { memory = memoryOf(device).value; } catch (e) { memory = parseExact(device.memory); }
      return { device, memory };
    });
    const scale = Math.max(...rows.map((r) => toNumber(r.memory)));
    const legend = document.createElement("p");
    legend.className = "legend";
    legend.innerHTML = '<span class="swatch weights"></span>weights <span class="swatch state"></span>state of ' +
      `${separated(plan.perDevice)} request${plan.perDevice === 1n ? "" : "s"} at ${separated(state.H)} tokens ` +
      '<span class="swatch workspace"></span>workspace <span class="swatch free"></span>free';
    box.appendChild(legend);
    for (const { device, memory } of rows) {
      const stateBytes = batch.error ? 0n : batch.value;
      const used = specc_bar_used(plan.weights.value, stateBytes, workspace);
      const free = specc_bar_free(memory, plan.weights.value, stateBytes, workspace);
      const short = specc_bar_short(memory, plan.weights.value, stateBytes, workspace);
      const row = document.createElement("div");
      row.className = "bar-row" + (device.name === state.device ? " selected" : "");
      const name = document.createElement("div");
      name.className = "bar-name";
      // the memory as a person reads it (e.g. "80 GiB"); the exact bytes, with separators, on hover
      name.textContent = `${device.display_name} (${approx(memory, "bytes") || showValue(memory, "bytes").main})`;
      name.title = `${showValue(memory, "bytes").main}${device.name === state.device && state.memory ? " (memory=)" : ""}`;
      row.appendChild(name);
      const bar = document.createElement("div");
      bar.className = "bar";
      bar.setAttribute("role", "img");
      const over = _R.cmp(free, 0n) < 0;
      const parts = [["weights", plan.weights.value], ["state", stateBytes], ["workspace", workspace],
                     ["free", over ? 0n : free]];
      const total = Math.max(scale, toNumber(used));
      for (const [cls, v] of parts) {
        const seg = document.createElement("span");
        seg.className = "seg " + cls;
        seg.style.width = `${Math.max(0, (100 * toNumber(v)) / total)}%`;
        seg.title = `${cls}: ${showValue(v, "bytes").main}`;
        bar.appendChild(seg);
      }
      const words = parts.map(([cls, v]) => `${cls} ${approx(v, "bytes") || showValue(v, "bytes").main}`).join(", ");
      bar.setAttribute("aria-label", `${device.display_name}: ${words}${over ? "; does not fit" : ""}`);
      row.appendChild(bar);
      const info = document.createElement("div");
      info.className = "bar-info";
      info.appendChild(document.createTextNode(over ? `does not fit: short by ${showValue(short, "bytes").main}; ` : ""));
      info.appendChild(document.createTextNode("b_max "));
      const cap = capacity(entry, device);
      info.appendChild(figureElement(cap, true));
      row.appendChild(info);
      if (over) row.classList.add("over");
      box.appendChild(row);
    }
  }

  // ------------------------------------------------------------ charts (SVG, log context axis)
  const SVGNS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) {
    const el = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    if (text !== undefined) el.textContent = text;
    return el;
  }
  const shortCount = (x) => (x >= 2 ** 20 ? `${x / 2 ** 20}M` : x >= 1024 ? `${x / 1024}K` : `${x}`);

  // a curve against the context length H: at(h) gives the figure at H = h, here at the page's H
  function chart(entry, fig, title, at, here) {
    const spec = entry.data;
    const top = spec.max_context ? Math.max(spec.max_context, Number(state.H)) : Math.max(2 ** 20, Number(state.H));
    const kmax = Math.ceil(Math.log2(Math.max(2, top)));
    const points = [];
    for (let i = 0; i <= kmax * 4; i++) {
      const h = BigInt(Math.round(2 ** (i / 4)));
      if (points.length && points[points.length - 1][0] === h) continue;
      const r = at(h);
      if (!r.error) points.push([h, toNumber(r.value)]);
    }
    const figure = document.createElement("figure");
    figure.className = "chart";
    const caption = document.createElement("figcaption");
    caption.textContent = title;
    figure.appendChild(caption);
    if (!points.length) {
      const why = document.createElement("p");
      why.className = "hint";
      why.textContent = `not available: ${here.error || "for this spec"}`;
      figure.appendChild(why);
      return figure;
    }
    const W = 360, Hh = 220, L = 64, R = 12, T = 12, Bm = 36;
    const ymax = Math.max(...points.map((p) => p[1]), here.error ? 0 : toNumber(here.value)) || 1;
    const x = (h) => L + ((W - L - R) * Math.log2(Math.max(1, Number(h)))) / kmax;
    const y = (v) => T + (Hh - T - Bm) * (1 - v / ymax);
    const axisTime = timeUnit(ymax);      // every tick of a time axis in the unit of its largest value
    const root = svg("svg", { viewBox: `0 0 ${W} ${Hh}`, role: "img",
                              "aria-label": `${title}, context from 1 to ${separated(2 ** kmax)} tokens on a log scale` });
    root.appendChild(svg("line", { x1: L, y1: y(0), x2: W - R, y2: y(0), class: "axis" }));
    root.appendChild(svg("line", { x1: L, y1: T, x2: L, y2: y(0), class: "axis" }));
    const step = Math.max(1, Math.ceil(kmax / 6));
    for (let k = 0; k <= kmax; k += step) {
      root.appendChild(svg("line", { x1: x(2 ** k), y1: y(0), x2: x(2 ** k), y2: y(0) + 4, class: "axis" }));
      root.appendChild(svg("text", { x: x(2 ** k), y: y(0) + 16, "text-anchor": "middle" }, shortCount(2 ** k)));
    }
    root.appendChild(svg("text", { x: (L + W - R) / 2, y: Hh - 4, "text-anchor": "middle" }, "context length (tokens, log scale)"));
    for (let i = 0; i <= 4; i++) {
      const v = (ymax * i) / 4;
      root.appendChild(svg("line", { x1: L - 4, y1: y(v), x2: W - R, y2: y(v), class: "grid" }));
      const label = fig.unit === "seconds" ? `${round3(v / axisTime[1])} ${axisTime[0]}`
        : fig.unit === "bytes" ? (approx(BigInt(Math.round(v)), "bytes") || `${Math.round(v)} B`)
          : (approx(BigInt(Math.round(v)), fig.unit) || round3(v));
      root.appendChild(svg("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end" }, label));
    }
    const d = points.map((p, i) => `${i ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
    root.appendChild(svg("path", { d, class: "curve" }));
    if (!here.error && state.H >= 1n) {
      const cx = x(state.H), cy = y(toNumber(here.value));
      root.appendChild(svg("circle", { cx, cy, r: 4.5, class: "current" }));
      // the label left of the point near the right edge, below it near the top, so the curve does not cross it
      const right = cx > W - R - 80;
      root.appendChild(svg("text", { x: right ? cx - 7 : cx + 7, y: cy < T + 24 ? cy + 16 : cy - 7,
                                     "text-anchor": right ? "end" : "start", class: "current-label" },
                           `H = ${separated(state.H)}`));
    }
    figure.appendChild(root);
    if (!here.error) figure.appendChild(figureElement({ ...here, fig: { ...fig, label: `${fig.label} at H` } }, true));
    return figure;
  }

  // ------------------------------------------------------------ claims
  // the claims table: the spec's, redrawn only when the spec changes (a large table costs a repaint most of its frame)
  let claimsShown = null;
  function claims(entry) {
    const spec = entry.data;
    if (claimsShown === spec) return;
    claimsShown = spec;
    const body = $("claims").tBodies[0];
    body.textContent = "";
    const counts = Object.entries(spec.summary).filter(([, n]) => n).map(([v, n]) => `${separated(n)} ${v}`);
    $("claims-summary").textContent = spec.claims.length
      ? `${separated(spec.claims.length)} claims from the source documents, checked by specc verify: ${counts.join(", ")}.`
      : "This spec has no claims.";
    for (const c of spec.claims) {
      const tr = document.createElement("tr");
      const source = c.source_name ? `${c.source_name}, ${c.source}` : c.source;
      for (const [text, cls] of [[c.id, "id"], [source, "source"], [c.eval, "query"], [c.expected, ""],
                                 [c.computed ? showComputed(c.computed) : "", "num"], [c.verdict, "verdict " + c.verdict]]) {
        const td = document.createElement("td");
        td.textContent = text;
        if (cls) td.className = cls;
        tr.appendChild(td);
      }
      if (c.gloss) {                          // the quote's English gloss, under the claim id
        const gloss = document.createElement("div");
        gloss.className = "gloss";
        gloss.textContent = c.gloss;
        tr.cells[0].appendChild(gloss);
      }
      if (c.note) tr.title = c.note;
      body.appendChild(tr);
    }
  }
  const showComputed = (text) => (/^-?[0-9]+$/.test(text) ? separated(BigInt(text)) : text);

  // ------------------------------------------------------------ controls
  function fillSelect(select, items, value) {
    select.textContent = "";
    for (const [v, label] of items) {
      const opt = document.createElement("option");
      opt.value = v;
      opt.textContent = label;
      select.appendChild(opt);
    }
    select.value = value;
  }

  function specControls(entry, fromURL) {
    const spec = entry.data;
    const box = $("options");
    box.textContent = "";
    state.options = Object.create(null);
    for (const o of spec.options) {
      const wanted = fromURL && state.urlOptions[o.name];
      if (wanted && !o.choices.includes(wanted)) problems.push(`option ${o.name} has no choice '${wanted}'`);
      state.options[o.name] = wanted && o.choices.includes(wanted) ? wanted : o.default;
      const label = document.createElement("label");
      label.htmlFor = "opt-" + o.name;
      label.textContent = `Option ${o.name}` + (o.doc ? ` — ${o.doc}` : "");
      const select = document.createElement("select");
      select.id = "opt-" + o.name;
      fillSelect(select, o.choices.map((c) => [c, c + (c === o.default ? " (default)" : "")]), state.options[o.name]);
      select.addEventListener("change", () => { state.options[o.name] = select.value; update(); });
      box.appendChild(label);
      box.appendChild(select);
    }
    const formats = spec.formats.map((f) => f.name);
    if (!(fromURL && formats.includes(state.format))) {
      if (fromURL && state.format) problems.push(`no format '${state.format}' in ${spec.name}`);
      state.format = defaultFormat(spec);
    }
    fillSelect($("format"), spec.formats.map((f) => [f.name, f.name + (f.doc ? ` — ${f.doc}` : "")]), state.format);
    knobControls(spec);
    const top = spec.max_context || 2 ** 20;
    $("H-slider").max = String(Math.ceil(Math.log2(top)));
    if (site.deployment) degreeChoices(spec, fromURL);
  }

  // weights=, kv=, compute=: empty is what the chosen format names (its scheme, its cache, the
  // scheme's math type); each choice with its doc from specs/formats/schemes.yaml
  function knobControls(spec) {
    const fmt = spec.formats.find((f) => f.name === state.format) || {};
    const own = { weights: fmt.scheme ? `the format's (${fmt.scheme})` : "the format's",
                  kv: fmt.kv ? `the format's (${fmt.kv})` : "the format's", compute: "follow the weights" };
    for (const key of KNOBS) {
      const items = key === "compute" ? site.knobs.compute.map((c) => [c, c])
        : site.knobs[key].map((k) => [k.name, `${k.name} — ${k.doc}`]);
      fillSelect($(key), [["", own[key]], ...items], state[key]);
    }
  }

  // the layouts this spec's data offers (spec.layouts): tp, pp, dp, and ep = 1 or tp·dp where
  // tp·dp divides the routed experts
  const layoutValue = (key, layout) => BigInt(new URLSearchParams(layout).get(key));
  // each degree's choices given the ones before it (tp, then dp, pp, ep): only exported layouts
  const FIXED = { tp: [], dp: ["tp"], pp: ["tp", "dp"], ep: ["tp", "dp", "pp"] };
  function offeredDegrees(spec, key) {
    const fixed = FIXED[key];
    const values = spec.layouts.filter((l) => fixed.every((k) => layoutValue(k, l) === state[k])).map((l) => layoutValue(key, l));
    return [...new Set(values)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }
  function degreeChoices(spec, fromURL) {
    for (const key of ["tp", "dp", "pp", "ep"]) {
      const offered = offeredDegrees(spec, key);
      if (!offered.includes(state[key])) {
        if (fromURL) {
          problems.push(`${key}=${state[key]} is not offered for ${spec.name} with ` +
                        `${FIXED[key].map((k) => `${k}=${state[k]}`).join(", ") || "this spec"} (${offered.join(", ")})`);
        }
        // keep expert parallelism on a new tp·dp when the experts allow it; else the nearest degree below
        const below = offered.filter((v) => v <= state[key]);
        // (the layouts offer ep = 1 and, where the experts allow it, ep = tp·dp: the largest)
        state[key] = key === "ep" ? (state.ep > 1n && offered.length > 1 ? offered[offered.length - 1] : 1n)
          : (below.length ? below[below.length - 1] : offered[0]);
      }
      fillSelect($(key), offered.map((v) => [String(v), String(v)]), state[key].toString());
    }
    const tpdp = offeredDegrees(spec, "ep").length > 1 ? "ep = tp·dp spreads the routed experts over the stage's GPUs"
      : "ep 1 (each routed expert split over tp·dp)";
    $("deployment-note").textContent = `Offered: tp ${offeredDegrees(spec, "tp").join(", ")}, dp ` +
      `${[...new Set(spec.layouts.map((l) => layoutValue("dp", l)))].join(", ")} with tp·dp up to ${site.max_stage_devices} GPUs ` +
      `per stage; pp ${offeredDegrees(spec, "pp").join(", ")}; ${tpdp}. Groups past a node use the device's scale-out link.` +
      (spec.options.length ? " With options other than the defaults the page answers for one device." : "");
  }

  function syncInputs() {
    for (const key of SCENARIO) $(key).value = state[key].toString();
    $("memory").value = state.memory;
    $("workspace").value = state.workspace;
    $("spec").value = state.spec;
    $("device").value = state.device;
    if (site.deployment) for (const key of DEGREES) $(key).value = state[key].toString();
    for (const key of RATES) $(key).value = state[key];
    for (const key of KNOBS) $(key).value = state[key];
    $("overlap").checked = state.overlap;
    const k = state.H >= 1n ? Math.round(Math.log2(Number(state.H))) : 0;
    $("H-slider").value = String(k);
    $("H-slider-value").textContent = `${separated(state.H)} tokens`;
  }

  function showProblems(list) {
    const box = $("errors");
    box.hidden = !list.length;
    box.textContent = list.join("; ");
  }

  function bindControls() {
    fillSelect($("spec"), site.specs.map((s) => [s.name, `${s.model} (${s.name})`]), state.spec);
    fillSelect($("device"), site.devices.map((d) => [d.name, d.display_name]), state.device);
    $("spec").addEventListener("change", () => {
      state.spec = $("spec").value;
      load(state.spec, () => { specControls(loaded[state.spec], false); fitDefaults(loaded[state.spec].data); update(); });
    });
    $("device").addEventListener("change", () => { state.device = $("device").value; update(); });
    $("format").addEventListener("change", () => {
      state.format = $("format").value;
      knobControls(loaded[state.spec].data);
      update();
    });
    for (const key of KNOBS) $(key).addEventListener("change", () => { state[key] = $(key).value; update(); });
    for (const key of SCENARIO) {
      $(key).addEventListener("input", () => {
        const raw = $(key).value.trim();
        const ok = /^[0-9]+$/.test(raw) && BigInt(raw) >= MINIMA[key];
        $(key).setAttribute("aria-invalid", ok ? "false" : "true");
        if (ok) { state[key] = BigInt(raw); chosen.add(key); update(key); }
      });
    }
    $("H-slider").addEventListener("input", () => { state.H = 2n ** BigInt($("H-slider").value); chosen.add("H"); update(); });
    if (site.deployment) {
      const box = $("deployment");
      const words = { tp: "Tensor-parallel degree (tp)", pp: "Pipeline stages (pp)",
                      dp: "Data-parallel groups (dp: each serves its own requests)",
                      ep: "Expert-parallel degree (ep: routed experts over ep of the stage's tp·dp GPUs)" };
      for (const key of ["tp", "pp", "dp", "ep"]) {
        const label = document.createElement("label");
        label.htmlFor = key;
        label.textContent = words[key];
        let input;
        if (site.deployment_grid[key]) {
          input = document.createElement("select");
          fillSelect(input, site.deployment_grid[key].map((v) => [String(v), String(v)]), state[key].toString());
        } else {
          input = document.createElement("input");
          Object.assign(input, { type: "number", min: "1", step: "1", value: state[key].toString() });
        }
        input.id = key;
        input.addEventListener(input.tagName === "SELECT" ? "change" : "input", () => {
          const raw = input.value.trim();
          if (/^[0-9]+$/.test(raw) && BigInt(raw) >= 1n) {
            state[key] = BigInt(raw);
            if (loaded[state.spec]) degreeChoices(loaded[state.spec].data, false);
            update();
          }
        });
        box.appendChild(label);
        box.appendChild(input);
      }
    }
    for (const key of RATES) {
      $(key).addEventListener("change", () => {
        try {
          parseFraction(key, $(key).value);
          $(key).setAttribute("aria-invalid", "false");
          state[key] = $(key).value.trim();
          update();
        } catch (e) {
          $(key).setAttribute("aria-invalid", "true");
          showProblems([e.message]);
        }
      });
    }
    $("overlap").addEventListener("change", () => { state.overlap = $("overlap").checked; update(); });
    for (const key of ["memory", "workspace"]) {
      $(key).addEventListener("change", () => {
        const raw = $(key).value.trim();
        try {
          if (raw || key === "workspace") parseBytes(raw || "0 B");
          $(key).setAttribute("aria-invalid", "false");
          state[key] = raw ? parseBytes(raw).text : (key === "workspace" ? "0 B" : "");
          update();
        } catch (e) {
          $(key).setAttribute("aria-invalid", "true");
          showProblems([e.message]);
        }
      });
    }
  }

  // ------------------------------------------------------------ render
  function update(typing) {
    const entry = loaded[state.spec];
    if (!entry) return;
    const list = problems.splice(0);
    for (const key of ["memory", "workspace"]) {
      if (state[key]) {
        try { state[key] = parseBytes(state[key]).text; } catch (e) { list.push(e.message); state[key] = key === "workspace" ? "0 B" : ""; }
      }
    }
    showProblems(list);
    if (!typing) syncInputs();
    else $("H-slider-value").textContent = `${separated(state.H)} tokens`;
    const spec = entry.data;
    $("model-title").textContent = `${spec.model} — ${spec.name}` + (spec.max_context ? `, up to ${separated(spec.max_context)} tokens of context` : "");
    const results = {};
    const box = $("figures");
    box.textContent = "";
    for (const fig of site.figures) {
      results[fig.id] = evaluate(entry, fig);
      box.appendChild(figureElement(results[fig.id], false));
    }
    const device = site.devices.find((d) => d.name === state.device);
    const plan = budget(entry, results);
    const capacityCards = [figureElement(capacity(entry, device), false)];
    if (site.queries.includes("h_max")) capacityCards.push(figureElement(contextCapacity(entry, device), false));
    if (!plan.dep.trivial) capacityCards.unshift(figureElement(plan.weights, false), figureElement(plan.one, false));
    const anchor = box.children[3] || null;
    for (const card of capacityCards) box.insertBefore(card, anchor);
    const times = {};
    const timeBox = $("time-figures");
    timeBox.textContent = "";
    for (const fig of site.time_figures) {
      times[fig.id] = evaluateTime(entry, fig, device);
      timeBox.appendChild(figureElement(times[fig.id], false));
    }
    $("time-title").textContent = `How fast on ${device.display_name}` +
      (deployment().trivial ? "" : ` (${deployment().args.join(", ")})`);
    bars(entry, plan);
    const charts = $("charts");
    charts.textContent = "";
    const byId = Object.fromEntries(site.figures.map((f) => [f.id, f]));
    const evaluator = (fig) => [(h) => evaluate(entry, fig, { H: h }), evaluate(entry, fig)];
    charts.appendChild(chart(entry, byId.state_request, "State per request against context length",
                             ...evaluator(byId.state_request)));
    const tpot = site.time_figures.find((f) => f.id === "tpot");
    charts.appendChild(chart(entry, tpot, `Time per output token on ${device.display_name} against context length`,
                             (h) => evaluateTime(entry, tpot, device, { H: h }), times.tpot));
    charts.appendChild(chart(entry, byId.decode_read_bytes, "Bytes one decode step reads against context length",
                             ...evaluator(byId.decode_read_bytes)));
    claims(entry);
    $("report-link").hidden = !site.docs;
    $("report-link").href = `docs/${spec.name}/report.html`;
    writeURL();
  }

  function start() {
    readURL();
    if (site.docs) $("docs-link").hidden = false;
    bindControls();
    load(state.spec, () => {
      specControls(loaded[state.spec], true);
      fitDefaults(loaded[state.spec].data);
      update();
      document.body.dataset.ready = "true";
    });
  }

  return { register, start, state, parseBytes, evaluate };
})();

document.addEventListener("DOMContentLoaded", SPECC.start);
