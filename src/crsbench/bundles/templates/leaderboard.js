// The leaderboard's one script: views, combining filters, sorting and the paired comparison, all kept
// in the URL fragment so that a link opens the same view. It reads the page's own tables and its JSON
// data block; it writes text only (textContent), never markup, and fetches nothing.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("page-data").textContent);
  var KEYS = ["view", "modality", "task", "axis", "family", "sort", "e", "f"];
  var state = {view: "overall", modality: "", task: "", axis: "", family: "", sort: "", e: "", f: ""};
  var all = function (selector, root) { return Array.prototype.slice.call((root || document).querySelectorAll(selector)); };

  function readFragment() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    KEYS.forEach(function (key) { state[key] = params.get(key) || (key === "view" ? "overall" : ""); });
    if (!state.e || data.encoders.indexOf(state.e) < 0) { state.e = data.encoders[0] || ""; }
    if (!state.f || data.encoders.indexOf(state.f) < 0) { state.f = data.encoders[1] || data.encoders[0] || ""; }
  }

  function fragment() {
    var params = new URLSearchParams();
    KEYS.forEach(function (key) { if (state[key]) { params.set(key, state[key]); } });
    return "#" + params.toString();
  }

  function scopeShown(el) {
    var task = el.getAttribute("data-task") || "", modality = el.getAttribute("data-modality") || "";
    var axis = el.getAttribute("data-axis") || "";
    if (state.axis && axis && axis !== state.axis) { return false; }
    if (state.task && task !== "overall" && task !== state.task) { return false; }
    if (state.task && task === "overall" && axis) { return false; }  // a task chosen: that task's axis tables
    if (state.modality && task !== "overall" && modality !== state.modality) { return false; }
    return true;
  }

  function sortKey(cell) {
    var value = cell.getAttribute("data-sort");
    return value === null ? null : parseFloat(value);
  }

  function sortTable(table) {
    var parts = state.sort.split(":"), key = parts[0], direction = parts[1] === "asc" ? 1 : -1;
    var headers = all("thead th", table), index = -1;
    headers.forEach(function (th, i) {
      th.removeAttribute("aria-sort");
      if (key && th.getAttribute("data-key") === key) { index = i; }
    });
    var body = table.tBodies[0];
    var rows = all("tr[data-order]", body);
    rows.sort(function (a, b) {
      var order = parseInt(a.getAttribute("data-order"), 10) - parseInt(b.getAttribute("data-order"), 10);
      if (index < 0) { return order; }
      var x = a.cells[index], y = b.cells[index];
      var numeric = headers[index].getAttribute("data-kind") !== "text";
      var p = numeric ? sortKey(x) : x.textContent, q = numeric ? sortKey(y) : y.textContent;
      if (p === null && q === null) { return order; }
      if (p === null) { return 1; }  // absent values last, whichever the direction
      if (q === null) { return -1; }
      var c = numeric ? p - q : p.localeCompare(q);
      return c !== 0 ? c * direction : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    if (index >= 0) { headers[index].setAttribute("aria-sort", direction > 0 ? "ascending" : "descending"); }
  }

  function format(value, digits) { return value === null ? "-" : value.toFixed(digits); }

  function renderComparison() {
    var body = document.getElementById("cmp-body");
    while (body.firstChild) { body.removeChild(body.firstChild); }
    var scopes = ["overall"].concat(data.tasks), rows = [];
    data.pairs.forEach(function (p) {
      if (p[2] !== state.e || p[3] !== state.f) { return; }
      if (state.task && p[0] !== "overall" && p[0] !== state.task) { return; }
      if (state.axis && p[1] !== state.axis && p[1] !== "crs") { return; }
      rows.push(p);
    });
    var axes = data.axis_order;
    rows.sort(function (a, b) {
      return (scopes.indexOf(a[0]) - scopes.indexOf(b[0])) || (axes.indexOf(a[1]) - axes.indexOf(b[1]));
    });
    if (!rows.length) {
      var empty = body.insertRow();
      var td = empty.insertCell();
      td.colSpan = 5;
      td.className = "t";
      td.textContent = state.e === state.f ? "choose two different encoders" : "no paired draws for this pair";
    }
    rows.forEach(function (p) {
      var tr = body.insertRow(), digits = p[1] === "crs" ? 1 : 3;
      tr.setAttribute("data-scope", p[0]);
      tr.setAttribute("data-axis", p[1]);
      var th = document.createElement("th");
      th.scope = "row";
      th.className = "t";
      th.textContent = p[0] === "overall" ? "across tasks" : "task " + p[0];
      tr.appendChild(th);
      var cells = [data.axes[p[1]] || p[1], format(p[4], digits),
                   p[5] === null ? "-" : "[" + format(p[5], digits) + ", " + format(p[6], digits) + "]",
                   format(p[7], 2)];
      cells.forEach(function (text, i) {
        var td = tr.insertCell();
        td.className = i === 0 ? "t" : "n";
        td.textContent = text;
      });
    });
  }

  function apply() {
    all("[data-view]").forEach(function (section) { section.hidden = section.getAttribute("data-view") !== state.view; });
    all("[data-view-link]").forEach(function (a) {
      var current = a.getAttribute("data-view-link") === state.view;
      a.classList.toggle("current", current);
      if (current) { a.setAttribute("aria-current", "page"); } else { a.removeAttribute("aria-current"); }
      var saved = state.view;
      state.view = a.getAttribute("data-view-link");
      a.setAttribute("href", fragment());
      state.view = saved;
    });
    all(".scope").forEach(function (el) { el.hidden = !scopeShown(el); });
    all("tbody tr[data-family]").forEach(function (row) {
      row.hidden = Boolean(state.family) && row.getAttribute("data-family") !== state.family;
    });
    all("[data-col-axis]").forEach(function (cell) {
      cell.hidden = Boolean(state.axis) && state.view !== "axis" && cell.getAttribute("data-col-axis") !== state.axis;
    });
    all("select[data-filter]").forEach(function (select) { select.value = state[select.getAttribute("data-filter")]; });
    document.getElementById("cmp-e").value = state.e;
    document.getElementById("cmp-f").value = state.f;
    all("table[data-sortable]").forEach(sortTable);
    renderComparison();
    var link = fragment();
    document.getElementById("view-link").setAttribute("href", link);
    if (location.hash !== link) { history.replaceState(null, "", link); }
  }

  all("select[data-filter]").forEach(function (select) {
    select.addEventListener("change", function () { state[select.getAttribute("data-filter")] = select.value; apply(); });
  });
  document.getElementById("cmp-e").addEventListener("change", function (event) { state.e = event.target.value; apply(); });
  document.getElementById("cmp-f").addEventListener("change", function (event) { state.f = event.target.value; apply(); });
  all("th[data-key] button").forEach(function (button) {
    button.addEventListener("click", function () {
      var th = button.parentNode, key = th.getAttribute("data-key");
      var text = th.getAttribute("data-kind") === "text";
      var current = state.sort.split(":");
      var direction = current[0] === key ? (current[1] === "asc" ? "desc" : "asc") : (text ? "asc" : "desc");
      state.sort = key + ":" + direction;
      apply();
    });
  });
  window.addEventListener("hashchange", function () { readFragment(); apply(); });
  readFragment();
  apply();
}());
