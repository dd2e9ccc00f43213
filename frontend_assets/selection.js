// The flat map's box and lasso selection (plotly.js's select and lasso drag modes), written into the
// selection store in the URL's form (sel=, backend/core/selection.py), so that Dash puts it into the
// URL and lists the molecules (app/selection_panel.py); the server decides which molecules it holds.
(function () {
  var MAP_SCALE = 10000;  // map units per Mollweide unit (app/figures.py MAP_SCALE)
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

  // The graph's element can be re-created (dcc.Loading); a light watch binds each new one once.
  setInterval(function () {
    var gd = document.querySelector("#orientation-map .js-plotly-plot");
    if (gd && gd.on && !gd._selectionBound) { bind(gd); }
  }, 200);
})();
