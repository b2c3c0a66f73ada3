// The layer table, drawn a page at a time from the JSON array in #c3-layers:
// sort by a header click, filter by layer or op name, page with the buttons.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("c3-layers").textContent);
  var digits = data.digits;
  var PAGE = 200;

  function human(v, radix, prefixes) {
    if (v === null || v === undefined) return "-";
    var p = 0, x = v;
    while (Math.abs(x) >= radix && p + 1 < prefixes.length) { x /= radix; p++; }
    return p === 0 ? String(v) + " " : x.toFixed(digits) + " " + prefixes[p];
  }
  function flops(v) { return human(v, 1000, ["", "K", "M", "G", "T", "P"]).trim(); }
  function bytes(v) { return human(v, 1024, ["", "Ki", "Mi", "Gi", "Ti", "Pi"]) + "B"; }
  function time(s) {
    if (s === null || s === undefined) return "-";
    if (s >= 1) return s.toFixed(digits) + " s";
    if (s >= 1e-3) return (s * 1e3).toFixed(digits) + " ms";
    if (s >= 1e-6) return (s * 1e6).toFixed(digits) + " µs";
    return (s * 1e9).toFixed(digits) + " ns";
  }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  // Rows: [index, name, op, flops, iops, mread, mwrite, runs, fused, bound_s,
  // bound, intensity, measured_s, measured_in, predicted_s, backward_flops,
  // backward_bytes, saves, time_formula] (the backward's three null without
  // a gradient; time_formula where a rule's time: formula predicted it).
  var rows = data.layers.map(function (l, i) { return [i + 1].concat(l); });
  // Columns: label, value of a row, text of the value (and its row), numeric.
  var cols = [
    ["#", function (r) { return r[0]; }, String, true],
    ["Layer", function (r) { return r[1]; }, esc, false],
    ["Op", function (r) { return r[2]; }, esc, false],
    ["FLOPs", function (r) { return r[3]; }, flops, true]
  ];
  if (data.iops) cols.push(["IOPs", function (r) { return r[4]; }, flops, true]);
  cols.push(
    ["Read", function (r) { return r[5]; }, bytes, true],
    ["Written", function (r) { return r[6]; }, bytes, true],
    ["Read+Written", function (r) { return r[5] + r[6]; }, bytes, true]
  );
  if (data.device) {
    cols.push(
      ["Bound", function (r) { return r[9]; }, time, true],
      ["Bound by", function (r) { return r[10]; }, esc, false],
      ["FLOP/B", function (r) { return r[11]; },
        function (v) { return v === null ? "-" : v.toFixed(2); }, true]
    );
  }
  if (data.fused) cols.push(["Fused", function (r) { return r[8] || ""; }, esc, false]);
  if (data.runs) cols.push(["Runs", function (r) { return r[7]; }, String, true]);
  if (data.measured) {
    // A layer fused into another's kernel shows whose time it is in.
    cols.push(["Measured", function (r) { return r[12]; }, function (v, r) {
      return v !== null ? time(v) : (r[13] ? "in " + esc(r[13]) : "-");
    }, true]);
  }
  if (data.predicted) {
    // A time a rule's time: formula gave is marked, with where it is written.
    cols.push(["Predicted", function (r) { return r[14]; }, function (v, r) {
      return time(v) + (r[18] ? ' <span title="time: ' + esc(r[18]) + '">†</span>' : "");
    }, true]);
  }
  if (data.training) {
    var orDash = function (f) { return function (v) { return v === null ? "-" : f(v); }; };
    cols.push(
      ["Bwd FLOPs", function (r) { return r[15]; }, orDash(flops), true],
      ["Bwd Read+Written", function (r) { return r[16]; }, orDash(bytes), true],
      ["Saves", function (r) { return r[17]; }, orDash(bytes), true]
    );
  }

  var shown = rows, page = 0, sortCol = 0, sortDir = 1;
  var box = document.getElementById("table-js");
  var controls = document.getElementById("table-controls");
  var range = document.getElementById("range");
  var filter = document.getElementById("filter");
  box.hidden = false;
  controls.hidden = false;

  function apply() {
    var q = filter.value.trim().toLowerCase();
    shown = q === "" ? rows.slice() : rows.filter(function (r) {
      return r[1].toLowerCase().indexOf(q) >= 0 || r[2].toLowerCase().indexOf(q) >= 0;
    });
    var key = cols[sortCol][1];
    shown.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (x === y) return a[0] - b[0];
      if (x === null) return 1;
      if (y === null) return -1;
      return (x < y ? -1 : 1) * sortDir;
    });
    page = 0;
    draw();
  }

  function draw() {
    var pages = Math.max(1, Math.ceil(shown.length / PAGE));
    page = Math.min(Math.max(page, 0), pages - 1);
    var from = page * PAGE, to = Math.min(shown.length, from + PAGE);
    var h = ['<table class="grid"><thead><tr>'];
    cols.forEach(function (c, i) {
      var dir = i === sortCol ? '<span class="dir">' + (sortDir > 0 ? " ▲" : " ▼") + "</span>" : "";
      h.push('<th class="sortable' + (c[3] ? " n" : "") + '" data-col="' + i + '">' + c[0] + dir + "</th>");
    });
    h.push("</tr></thead><tbody>");
    for (var k = from; k < to; k++) {
      var r = shown[k];
      h.push("<tr>");
      cols.forEach(function (c) {
        h.push(c[3] ? '<td class="n">' : "<td>", c[2](c[1](r), r), "</td>");
      });
      h.push("</tr>");
    }
    h.push("</tbody></table>");
    box.innerHTML = h.join("");
    range.textContent = shown.length === 0 ? "no layer matches"
      : "layers " + (from + 1) + "–" + to + " of " + shown.length +
        (shown.length < rows.length ? " (of " + rows.length + ")" : "");
  }

  box.addEventListener("click", function (e) {
    var th = e.target.closest("th[data-col]");
    if (!th) return;
    var c = Number(th.getAttribute("data-col"));
    if (c === sortCol) sortDir = -sortDir;
    else { sortCol = c; sortDir = cols[c][3] && c > 0 ? -1 : 1; }
    apply();
  });
  var timer = null;
  filter.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(apply, 150);
  });
  document.getElementById("first").onclick = function () { page = 0; draw(); };
  document.getElementById("prev").onclick = function () { page--; draw(); };
  document.getElementById("next").onclick = function () { page++; draw(); };
  document.getElementById("last").onclick = function () { page = 1e12; draw(); };
  apply();
})();
