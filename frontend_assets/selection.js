// The flat map's box and lasso selection (plotly.js's select and lasso drag modes), written into the
// selection store in the URL's form (sel=, backend/core/selection.py), so that Dash puts it into the
// URL and lists the molecules (app/selection_panel.py); the server decides which molecules it holds.
(function () {
  var MAP_SCALE = 10000;  // map units per Mollweide unit (backend/figures/plots.py MAP_SCALE)
  var MAX_VERTICES = 200;  // backend/core/selection.py MAX_VERTICES
  var LIMIT = 6;  // backend/core/selection.py MAX_COORDINATE

  function coordinate(v) {
    return Math.max(-LIMIT, Math.min(LIMIT, v / MAP_SCALE)).toFixed(4);
  }

  // "box:x0,x1,y0,y1" or "lasso:x1,y1,...", Mollweide units, of a plotly_selected event; null for none.
  function selectionText(ev) {
    if (!ev) { return null; }
    if (ev.range && ev.range.x && ev.range.y) {
      var x = ev.range.x, y = ev.range.y;
      return "box:" + [Math.min(x[0], x[1]), Math.max(x[0], x[1]), Math.min(y[0], y[1]), Math.max(y[0], y[1])]
        .map(coordinate).join(",");
    }
    var lasso = ev.lassoPoints;
    if (lasso && lasso.x && lasso.x.length >= 3) {
      var step = Math.ceil(lasso.x.length / MAX_VERTICES), out = [];  // thinned to fit a URL
      for (var i = 0; i < lasso.x.length; i += step) { out.push(coordinate(lasso.x[i]), coordinate(lasso.y[i])); }
      return out.length >= 6 ? "lasso:" + out.join(",") : null;
    }
    return null;
  }

  function isFlatMap(gd) {
    var meta = gd && gd.layout && gd.layout.meta && gd.layout.meta.map;
    return !!meta && meta.view === "map";
  }

  function setSelection(text) {
    var clientside = window.dash_clientside;
    if (clientside && clientside.set_props) { clientside.set_props("map-selection", { data: text }); }
  }

  function bind(gd) {
    gd._selectionBound = true;
    gd.on("plotly_selected", function (ev) {
      var text = isFlatMap(gd) ? selectionText(ev) : null;
      if (text) { setSelection(text); }
    });
    gd.on("plotly_deselect", function () {
      if (isFlatMap(gd)) { setSelection(null); }
    });
  }

  // "Clear selection" also takes the drawn outline off the map.
  document.addEventListener("click", function (ev) {
    if (!ev.target || ev.target.id !== "selection-clear") { return; }
    var gd = document.querySelector("#orientation-map .js-plotly-plot");
    if (gd && gd.layout && window.Plotly) { window.Plotly.relayout(gd, { selections: [] }); }
  });

  // The URL's selection outlined over the map, as an SVG overlay (as the selected molecule's ring is), so
  // that a reload or a shared link shows where it is, at any zoom, in either mode.
  var SVG_NS = "http://www.w3.org/2000/svg";

  function urlSelection() {
    return new URLSearchParams(window.location.search).get("sel");
  }

  // [[x, y], ...] Mollweide vertices of a selection's URL text, or [] for none.
  function vertices(text) {
    var kind = (text || "").split(":")[0], v = (text || "").slice(kind.length + 1).split(",").map(Number);
    if (kind === "box" && v.length === 4) { return [[v[0], v[2]], [v[1], v[2]], [v[1], v[3]], [v[0], v[3]]]; }
    var out = [];
    if (kind === "lasso") { for (var i = 0; i + 1 < v.length; i += 2) { out.push([v[i], v[i + 1]]); } }
    return out;
  }

  function drawOutline(host, gd) {
    var svg = host.querySelector("svg.region-outline");
    if (!svg) {
      svg = document.createElementNS(SVG_NS, "svg");
      svg.setAttribute("class", "region-outline");
      svg.style.position = "absolute";
      svg.style.pointerEvents = "none";
      host.appendChild(svg);
    }
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var axes = isFlatMap(gd) && window.orientscopeMap && window.orientscopeMap.cartesianAxes(gd);
    var corners = vertices(urlSelection());
    if (!axes || corners.length < 3) { return; }
    var hostBox = host.getBoundingClientRect(), box = gd.getBoundingClientRect();
    svg.style.left = (box.left - hostBox.left) + "px";
    svg.style.top = (box.top - hostBox.top) + "px";
    svg.setAttribute("width", box.width);
    svg.setAttribute("height", box.height);
    var polygon = document.createElementNS(SVG_NS, "polygon");
    polygon.setAttribute("points", corners.map(function (p) {
      return axes.x.toPixel(p[0] * MAP_SCALE) + "," + axes.y.toPixel(p[1] * MAP_SCALE);
    }).join(" "));
    polygon.setAttribute("fill", "none");
    polygon.setAttribute("stroke", "#333333");
    polygon.setAttribute("stroke-width", "1.5");
    polygon.setAttribute("stroke-dasharray", "5 3");
    svg.appendChild(polygon);
  }

  // The graph's element can be re-created (dcc.Loading); a light watch binds each new one once, and
  // redraws the outline when the URL's selection or the drawn figure changes.
  setInterval(function () {
    var host = document.getElementById("orientation-map");
    var gd = host && host.querySelector(".js-plotly-plot");
    if (!gd || !gd.on) { return; }
    if (!gd._selectionBound) {
      bind(gd);
      var again = function () { drawOutline(host, gd); };
      ["plotly_afterplot", "plotly_relayout", "plotly_relayouting"].forEach(function (ev) { gd.on(ev, again); });
    }
    var meta = gd.layout && gd.layout.meta && gd.layout.meta.map;
    var now = urlSelection() + "|" + (meta && meta.token);
    if (now !== host._outlined) {
      host._outlined = now;
      drawOutline(host, gd);
    }
  }, 200);
})();
