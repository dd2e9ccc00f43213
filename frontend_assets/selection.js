// The flat map's box or lasso selection in the URL's form (sel=, backend/core/selection.py), so that Dash puts it into
// the URL and lists the molecules (app/selection_panel.py); the server decides which molecules it holds. map_draw.js
// draws the box or lasso and hands its polygon over (orientscope.js drawPlane's onSelect writes the selection store);
// the URL's selection is outlined again on a reload or a shared link, at any zoom.
(function () {
  var MAX_VERTICES = 200;  // backend/core/selection.py MAX_VERTICES
  var LIMIT = 6;  // backend/core/selection.py MAX_COORDINATE

  function coordinate(v) {
    return Math.max(-LIMIT, Math.min(LIMIT, v)).toFixed(4);
  }

  // "lasso:x1,y1,..." of a polygon ([[x, y], ...] Mollweide units, thinned to fit a URL), or with `kind` "box"
  // "box:x0,x1,y0,y1" of its bounds (map_draw.js's box selection: its four corners); null for none.
  function textOf(polygon, kind) {
    if (!polygon || polygon.length < 3) { return null; }
    if (kind === "box") {
      var xs = polygon.map(function (p) { return p[0]; }), ys = polygon.map(function (p) { return p[1]; });
      return "box:" + [Math.min.apply(null, xs), Math.max.apply(null, xs), Math.min.apply(null, ys),
                       Math.max.apply(null, ys)].map(coordinate).join(",");
    }
    var step = Math.ceil(polygon.length / MAX_VERTICES), out = [];
    for (var i = 0; i < polygon.length; i += step) { out.push(coordinate(polygon[i][0]), coordinate(polygon[i][1])); }
    return out.length >= 6 ? "lasso:" + out.join(",") : null;
  }

  // [[x, y], ...] Mollweide vertices of a selection's URL text ("box:x0,x1,y0,y1" or "lasso:..."), or [] for none.
  function vertices(text) {
    var kind = (text || "").split(":")[0], v = (text || "").slice(kind.length + 1).split(",").map(Number);
    if (kind === "box" && v.length === 4) { return [[v[0], v[2]], [v[1], v[2]], [v[1], v[3]], [v[0], v[3]]]; }
    var out = [];
    if (kind === "lasso") { for (var i = 0; i + 1 < v.length; i += 2) { out.push([v[i], v[i + 1]]); } }
    return out;
  }

  // "Clear selection" also takes the drawn outline off the map.
  document.addEventListener("click", function (ev) {
    if (!ev.target || ev.target.id !== "selection-clear") { return; }
    var host = document.getElementById("orientation-map");
    if (host && host._mapHandle) { host._mapHandle.showSelection(null); }
  });

  window.orientscopeSelection = { textOf: textOf, vertices: vertices };
})();
