// The scatter view (a property against an axis coordinate, app/scatter_panel.py): its controls show in
// that view only, and a hover or click on its aggregated image asks the server for the nearest molecule
// (GET .../scatter/nearest, by the map's pick rule; the points mode's hover and clicks are plotly.js's own,
// through Dash). The hover says what the map's does: the molecule, its formula, the colour's value for it,
// and how many molecules share its pixel of the plot.
(function () {
  function scatterMeta(gd) {
    var meta = gd && gd.layout && gd.layout.meta && gd.layout.meta.map;
    return meta && meta.view === "scatter" ? meta : null;
  }

  function setHint(text) {
    var el = document.getElementById("map-hint");
    if (el) { el.textContent = text || ""; }
  }

  // The click's position in data units (log10 units of a log axis) and a pixel's size there, or null
  // outside the plot area.
  function clickQuery(gd, ev) {
    var axes = window.orientscopeMap && window.orientscopeMap.cartesianAxes(gd);
    if (!axes) { return null; }
    var box = gd.getBoundingClientRect();
    var px = ev.clientX - box.left, py = ev.clientY - box.top;
    if (px < axes.x.offset || px > axes.x.offset + axes.x.length ||
        py < axes.y.offset || py > axes.y.offset + axes.y.length) { return null; }
    var xs = [axes.x.toValue(axes.x.offset), axes.x.toValue(axes.x.offset + axes.x.length)];
    var ys = [axes.y.toValue(axes.y.offset), axes.y.toValue(axes.y.offset + axes.y.length)];
    return { x: axes.x.toValue(px), y: axes.y.toValue(py),
             dx: Math.abs(axes.x.toValue(px + 1) - axes.x.toValue(px)),
             dy: Math.abs(axes.y.toValue(py + 1) - axes.y.toValue(py)),
             // the region shown and its pixels: the grid whose pixel a hover counts the molecules of
             x0: Math.min(xs[0], xs[1]), x1: Math.max(xs[0], xs[1]), y0: Math.min(ys[0], ys[1]),
             y1: Math.max(ys[0], ys[1]), width: Math.max(1, Math.round(axes.x.length)),
             height: Math.max(1, Math.round(axes.y.length)) };
  }

  // The molecule nearest to a mouse event on the image (a promise of the server's answer), or null.
  function nearestTo(gd, meta, ev) {
    var q = clickQuery(gd, ev);
    if (!q) { return null; }
    var params = Object.assign({}, meta.query, meta.paint, q);
    var url = "/api/datasets/" + encodeURIComponent(meta.dataset) + "/scatter/nearest?" + Object.keys(params).map(
      function (k) { return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]); }).join("&");
    return fetch(url).then(function (r) { return r.ok ? r.json() : null; });
  }

  // A moment's rest on the image names the molecule a click there would open (the map's tooltip).
  var HOVER_MS = 120;

  // "molecule 17 · C3H6O · gap (Ha): 0.2513 · 4 molecules share this pixel": the fields it has.
  function describeHit(hit) {
    var value = typeof hit.value === "number" ? hit.value.toPrecision(4) : hit.value;
    var words = ["molecule " + hit.id, hit.formula,
                 value === null || value === undefined ? null : (hit.color || "colour") + ": " + value];
    if (hit.shared > 1) { words.push(hit.shared + " molecules share this pixel"); }
    return words.filter(Boolean).join(" · ");
  }

  function onImageHover(host, gd, ev) {
    var meta = scatterMeta(gd), tip = host.querySelector(".scatter-tooltip");
    clearTimeout(host._scatterHover);
    if (tip) { tip.hidden = true; }
    if (!meta || meta.mode !== "image" || ev.buttons) { return; }
    host._scatterHover = setTimeout(function () {
      var answer = nearestTo(gd, meta, ev);
      if (!answer) { return; }
      answer.then(function (hit) {
        if (!hit || hit.id === null) { return; }
        if (!tip) {
          tip = document.createElement("div");
          tip.className = "map-tooltip scatter-tooltip";
          host.appendChild(tip);
        }
        var box = host.getBoundingClientRect();
        tip.textContent = describeHit(hit);
        tip.dataset.molecule = hit.id;
        tip.dataset.shared = hit.shared || "";
        tip.style.left = (ev.clientX - box.left + 12) + "px";
        tip.style.top = (ev.clientY - box.top + 12) + "px";
        tip.hidden = false;
      }, function () {});
    }, HOVER_MS);
  }

  function onImageClick(host, gd, ev) {
    var meta = scatterMeta(gd);
    if (!meta || meta.mode !== "image" || !host._press ||
        Math.abs(host._press.x - ev.clientX) + Math.abs(host._press.y - ev.clientY) > 4) { return; }  // a drag
    var answer = nearestTo(gd, meta, ev);
    if (!answer) { return; }
    answer.then(function (hit) {
      if (!hit) { return; }
      if (hit.id === null) {
        setHint("No molecule within 5 px of that click; click closer to a point or zoom in.");
        return;
      }
      setHint("");
      host.dataset.clicked = hit.id;
      window.dash_clientside.set_props("selected", { data: hit.id });
    }, function () {});
  }

  // A zoom or pan of the image asks the server for the region's image at the plot's size, coloured as the
  // view (GET .../scatter/image, straight as the image's source); double-click or home return to all the points.
  function onZoom(gd, ev) {
    var meta = scatterMeta(gd), keys = Object.keys(ev || {});
    if (!meta || meta.mode !== "image" || !meta.home ||
        !keys.some(function (k) { return k.indexOf("xaxis") === 0 || k.indexOf("yaxis") === 0; })) { return; }
    var h = meta.home;
    if (ev["xaxis.autorange"] || ev["yaxis.autorange"]) {
      window.Plotly.relayout(gd, { "xaxis.range": [h[0], h[1]], "yaxis.range": [h[2], h[3]] });
      return;
    }
    var axes = window.orientscopeMap.cartesianAxes(gd), xr = gd.layout.xaxis.range, yr = gd.layout.yaxis.range;
    if (!axes || !xr || !yr) { return; }
    var region = { x0: Math.min(xr[0], xr[1]), x1: Math.max(xr[0], xr[1]),
                   y0: Math.min(yr[0], yr[1]), y1: Math.max(yr[0], yr[1]) };
    var params = Object.assign({}, meta.query, meta.paint, region,
                               { width: Math.max(1, Math.round(axes.x.length)), height: Math.max(1, Math.round(axes.y.length)) });
    var url = "/api/datasets/" + encodeURIComponent(meta.dataset) + "/scatter/image?" + Object.keys(params).map(
      function (k) { return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]); }).join("&");
    window.Plotly.relayout(gd, { "images[0].source": url, "images[0].x": region.x0, "images[0].y": region.y1,
                                 "images[0].sizex": region.x1 - region.x0, "images[0].sizey": region.y1 - region.y0 });
  }

  // The graph's element can be re-created (dcc.Loading); a light watch binds each new one once.
  setInterval(function () {
    var host = document.getElementById("orientation-map");
    var gd = host && host.querySelector(".js-plotly-plot");
    if (!gd || !gd.on || gd._scatterBound) { return; }
    gd._scatterBound = true;
    gd.addEventListener("mousedown", function (ev) { host._press = { x: ev.clientX, y: ev.clientY }; }, true);
    gd.addEventListener("click", function (ev) { onImageClick(host, gd, ev); });
    gd.addEventListener("mousemove", function (ev) { onImageHover(host, gd, ev); });
    gd.on("plotly_relayout", function (ev) { onZoom(gd, ev); });
    gd.addEventListener("mouseleave", function () {
      clearTimeout(host._scatterHover);
      var tip = host.querySelector(".scatter-tooltip");
      if (tip) { tip.hidden = true; }
    });
  }, 200);

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    scatter: {
      showControls: function (view) { return view !== "scatter"; }
    }
  });
})();
