/* xlabench report: draws every chart of the page with Plotly from the embedded JSON, and
 * redraws them when a filter changes. Each chart goes through the same steps as
 * report/charts.py `visible_rows` (filter, rank, aggregate), so the page, after filtering,
 * shows what the PNG would. Values are escaped before Plotly sees them: Plotly reads a subset
 * of HTML in labels, and a model name is data, not markup. */
(function () {
  "use strict";

  var payload = JSON.parse(document.getElementById("xlabench-data").textContent);
  var palette = payload.palette;
  var state = {};

  function esc(value) {
    return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function isNum(v) {
    return typeof v === "number" && isFinite(v);
  }

  function missing(v) {
    return v === null || v === undefined;
  }

  function fmt(v) {
    if (missing(v)) return "–";
    if (typeof v === "boolean") return v ? "yes" : "no";
    if (typeof v === "number") {
      if (Number.isInteger(v)) return String(v);
      return Math.abs(v) >= 1000 ? v.toFixed(0) : v.toPrecision(4);
    }
    return String(v);
  }

  /* Ascending order with missing values last, as pandas' sort_values. */
  function cmp(a, b) {
    if (missing(a) || missing(b)) return missing(a) === missing(b) ? 0 : (missing(a) ? 1 : -1);
    if (typeof a === "number" && typeof b === "number") return a - b;
    a = String(a);
    b = String(b);
    return a < b ? -1 : (a > b ? 1 : 0);
  }

  function keyOf(row, columns) {
    return JSON.stringify(columns.map(function (c) { return missing(row[c]) ? null : row[c]; }));
  }

  /* analysis.ranking.rank: best first, one row per `per`, top_n per `top_per`. */
  function rank(rows, rule) {
    var data = rows.filter(function (r) { return isNum(r[rule.by]); });
    data.sort(function (a, b) { return (b[rule.by] - a[rule.by]) || cmp(a[rule.tiebreak], b[rule.tiebreak]); });
    if (rule.per.length) {
      var seen = {};
      data = data.filter(function (r) {
        var k = keyOf(r, rule.per);
        if (seen[k]) return false;
        seen[k] = true;
        return true;
      });
    }
    var counts = {};
    data = data.map(function (r) {
      var k = keyOf(r, rule.top_per);
      counts[k] = (counts[k] || 0) + 1;
      return Object.assign({}, r, { rank: counts[k] });
    });
    if (rule.top_n !== null) data = data.filter(function (r) { return r.rank <= rule.top_n; });
    markNoise(data, rule);
    data.sort(function (a, b) {
      for (var i = 0; i < rule.top_per.length; i++) {
        var d = cmp(a[rule.top_per[i]], b[rule.top_per[i]]);
        if (d) return d;
      }
      return a.rank - b.rank;
    });
    return data;
  }

  /* analysis.ranking.within_noise: a CI overlapping the neighbour above or below. */
  function markNoise(data, rule) {
    if (!rule.ci_low || !rule.ci_high) return;
    var groups = {};
    data.forEach(function (r) {
      var k = keyOf(r, rule.top_per);
      (groups[k] = groups[k] || []).push(r);
    });
    Object.keys(groups).forEach(function (k) {
      var g = groups[k];
      g.forEach(function (r, i) {
        var lo = r[rule.ci_low], hi = r[rule.ci_high];
        if (!isNum(lo) || !isNum(hi)) {
          r.within_noise = null;
          return;
        }
        var above = i > 0 ? g[i - 1][rule.ci_low] : null;
        var below = i + 1 < g.length ? g[i + 1][rule.ci_high] : null;
        r.within_noise = (isNum(above) && above <= hi) || (isNum(below) && lo <= below);
      });
    });
  }

  function aggregate(rows, chart) {
    var keys = [chart.series, chart.symbol, chart.x].filter(function (k) { return !!k; });
    var sums = {}, order = [];
    rows.forEach(function (r) {
      var k = keyOf(r, keys);
      if (!(k in sums)) {
        order.push(k);
        sums[k] = Object.assign({}, r);
        sums[k][chart.y] = 0;
      }
      sums[k][chart.y] += isNum(r[chart.y]) ? r[chart.y] : 0;
    });
    return order.map(function (k) { return sums[k]; });
  }

  function visibleRows(chart) {
    var rows = chart.rows.filter(function (r) {
      return chart.filter_columns.every(function (c) {
        return !state[c] || String(r[c]) === state[c];
      });
    });
    if (chart.rank) rows = rank(rows, chart.rank);
    if (chart.aggregate) rows = aggregate(rows, chart);
    return rows;
  }

  function traceGroups(chart, rows) {
    var byKey = {}, keys = [];
    rows.forEach(function (r) {
      var name = chart.series ? String(r[chart.series]) : "";
      var published = !!chart.symbol && r[chart.symbol] === "published";
      var k = JSON.stringify([name, published]);
      if (!byKey[k]) {
        byKey[k] = { name: name, published: published, rows: [] };
        keys.push(k);
      }
      byKey[k].rows.push(r);
    });
    var order = chart.series_values;
    return keys.map(function (k) { return byKey[k]; }).sort(function (a, b) {
      return (Math.max(order.indexOf(a.name), 0) - Math.max(order.indexOf(b.name), 0)) ||
        (a.published - b.published);
    });
  }

  function traceName(chart, group) {
    if (chart.series) return group.published ? group.name + " (published)" : group.name;
    if (chart.symbol) return group.published ? "published" : "local";
    return chart.y_title;
  }

  function hoverText(chart, row) {
    var lines = chart.hover.map(function (h) { return esc(h[1]) + ": " + esc(fmt(row[h[0]])); });
    if (chart.rank && chart.rank.ci_low) {
      var noise = { "true": "within noise of a neighbour", "false": "clear", "null": "no CI" };
      lines.push("rank " + row.rank + " (" + noise[String(row.within_noise)] + ")");
    }
    return lines.join("<br>");
  }

  function errorBars(chart, rows) {
    if (!chart.error) return undefined;
    /* A missing bound draws no bar at all (null - y would be -y in JavaScript). */
    function len(a, b) {
      if (!isNum(a) || !isNum(b)) return null;
      return a - b > 0 ? a - b : 0;
    }
    var up = rows.map(function (r) { return len(r[chart.error[1]], r[chart.y]); });
    var down = rows.map(function (r) { return len(r[chart.y], r[chart.error[0]]); });
    var any = up.concat(down).some(function (v) { return v !== null; });
    /* Plotly still draws a cap for a null length: no interval at all, no error bars. */
    if (!any) return undefined;
    return { type: "data", symmetric: false, thickness: 1, width: 3, array: up, arrayminus: down };
  }

  function bubbleSizes(chart, allRows, rows) {
    var top = Math.max.apply(null, allRows.map(function (r) { return isNum(r[chart.size]) ? r[chart.size] : 0; }));
    return rows.map(function (r) {
      var v = r[chart.size];
      if (!isNum(v)) return chart.bubble[0];
      if (!(top > 0)) return chart.bubble[0] + chart.bubble[1] / 2;
      return chart.bubble[0] + chart.bubble[1] * Math.sqrt(Math.max(v, 0) / top);
    });
  }

  function makeTrace(chart, group, allRows) {
    var colour = palette[Math.max(chart.series_values.indexOf(group.name), 0) % palette.length];
    var rows = group.rows;
    if (chart.kind === "line") rows = rows.slice().sort(function (a, b) { return cmp(a[chart.x], b[chart.x]); });
    var labelled = chart.label && allRows.length <= chart.label_limit;
    var trace = {
      name: esc(traceName(chart, group)),
      x: rows.map(function (r) { return chart.x_category ? String(r[chart.x]) : r[chart.x]; }),
      y: rows.map(function (r) { return r[chart.y]; }),
      hovertext: rows.map(function (r) { return hoverText(chart, r); }),
      hoverinfo: "text",
      error_y: errorBars(chart, rows),
    };
    if (labelled) trace.text = rows.map(function (r) { return esc(fmt(r[chart.label])); });
    if (chart.kind === "bar") {
      trace.type = "bar";
      trace.marker = { color: colour, opacity: group.published ? 0.6 : 1,
                       pattern: { shape: group.published ? "/" : "" } };
      if (labelled) trace.textposition = "outside";
      if (chart.barmode === "relative") delete trace.error_y;
      return trace;
    }
    trace.type = "scatter";
    trace.mode = (chart.kind === "line" ? "lines+markers" : "markers") + (labelled ? "+text" : "");
    trace.textposition = "top center";
    trace.textfont = { size: 9 };
    trace.marker = {
      color: colour, symbol: group.published ? "diamond-open" : "circle",
      size: chart.size ? bubbleSizes(chart, allRows, rows) : 9, line: { width: 1, color: colour },
    };
    return trace;
  }

  function hlines(chart) {
    var shown = chart.hlines.filter(function (h) {
      return Object.keys(h.when).every(function (c) { return !state[c] || state[c] === String(h.when[c]); });
    });
    return {
      shapes: shown.map(function (h) {
        return { type: "line", xref: "paper", x0: 0, x1: 1, y0: h.y, y1: h.y,
                 line: { dash: "dot", width: 1, color: "grey" } };
      }),
      annotations: shown.map(function (h) {
        return { xref: "paper", x: 0, y: h.y, text: esc(h.label), showarrow: false,
                 xanchor: "left", yanchor: "bottom", font: { size: 10, color: "grey" } };
      }),
    };
  }

  function axis(title, category, log, rows, column) {
    var ax = { title: { text: esc(title) }, automargin: true, type: category ? "category" : (log ? "log" : "linear") };
    if (category) {
      var seen = {};
      ax.categoryorder = "array";
      ax.categoryarray = rows.map(function (r) { return String(r[column]); })
        .filter(function (c) { return seen[c] ? false : (seen[c] = true); });
    }
    return ax;
  }

  function render(chart) {
    var div = document.getElementById("chart-" + chart.key);
    var rows = visibleRows(chart);
    var traces = traceGroups(chart, rows).map(function (g) { return makeTrace(chart, g, rows); });
    var lines = hlines(chart);
    var layout = {
      title: { text: esc(chart.title), font: { size: 14 } },
      xaxis: axis(chart.x_title, chart.x_category, chart.log_x, rows, chart.x),
      yaxis: axis(chart.y_title, false, chart.log_y, rows, chart.y),
      barmode: chart.barmode, hovermode: "closest", height: 520,
      margin: { t: 60, r: 20, b: 80, l: 70 }, shapes: lines.shapes, annotations: lines.annotations,
    };
    if (!rows.length) {
      layout.annotations = [{ text: "No data for these filters", showarrow: false, xref: "paper",
                              yref: "paper", x: 0.5, y: 0.5, font: { size: 16 } }];
    }
    div.setAttribute("data-points", String(rows.length));
    return Plotly.react(div, traces, layout, { responsive: true, displaylogo: false });
  }

  /* The reader's bound of a bounded table: a number, Infinity when empty (no bound), or
   * null for a table without one. */
  function boundOf(table) {
    var input = table.parentElement.querySelector("input[data-bound-input]");
    if (!input) return null;
    var v = parseFloat(input.value);
    return isFinite(v) ? v : Infinity;
  }

  /* analysis.deploy.first_under: rows come in rank order per group; per group, show the
   * first row that passes the filters and whose bounded value is below the bound. */
  function filterTables() {
    document.querySelectorAll("table[data-filterable]").forEach(function (table) {
      var shown = 0, bound = boundOf(table), taken = {};
      table.querySelectorAll("tbody tr").forEach(function (tr) {
        var ok = Object.keys(state).every(function (c) {
          var v = tr.getAttribute("data-f-" + c);
          return !state[c] || v === null || v === state[c];
        });
        if (ok && bound !== null) {
          var group = tr.getAttribute("data-group");
          ok = parseFloat(tr.getAttribute("data-bound-value")) < bound && !taken[group];
          if (ok) taken[group] = true;
        }
        tr.hidden = !ok;
        if (ok) shown += 1;
      });
      var note = table.parentElement.querySelector(".filtered-empty");
      if (note) note.hidden = shown > 0;
    });
  }

  function renderAll() {
    var pending = payload.charts.map(function (chart) {
      try {
        return render(chart);
      } catch (err) {
        console.error("xlabench: chart " + chart.key + " failed: " + err);
        return null;
      }
    });
    filterTables();
    return Promise.all(pending).then(function () {
      document.body.setAttribute("data-rendered", String(Number(document.body.getAttribute("data-rendered") || 0) + 1));
    });
  }

  var selects = document.querySelectorAll("select[data-filter]");
  selects.forEach(function (select) {
    state[select.getAttribute("data-filter")] = select.value;
    select.addEventListener("change", function () {
      state[select.getAttribute("data-filter")] = select.value;
      renderAll();
    });
  });
  /* A bound changes only which table rows are shown: no chart reads it. */
  document.querySelectorAll("input[data-bound-input]").forEach(function (input) {
    input.addEventListener("input", filterTables);
  });
  var form = document.getElementById("filters");
  if (form) {
    form.addEventListener("reset", function () {
      setTimeout(function () {
        selects.forEach(function (s) { state[s.getAttribute("data-filter")] = s.value; });
        renderAll();
      }, 0);
    });
  }
  renderAll();
})();
