// The scatter view (a property against an axis coordinate, app/scatter_panel.py). Its hover and clicks are the
// server's pick, as the map's (GET .../scatter/preview and .../scatter/nearest: the molecule nearest to the cursor
// within 5 px, and the molecules sharing its pixel), in both modes: a hover names the molecule a click opens, with
// its preview card, and a click on a shared pixel opens the chooser (GET .../scatter/shared). The pixel grid is the
// image's own over an aggregated image, the plot's over points. A zoom or pan goes into the URL (?zoom=, in the
// plot's units: log10 of the property on a log scale) and, over an image, asks the server for the region's image;
// double-click or home return to the view's home region (layout.meta.map.home), and the back button restores a zoom.
(function () {
  function scatterMeta(gd) {
    var meta = gd && gd.layout && gd.layout.meta && gd.layout.meta.map;
    return meta && meta.view === "scatter" ? meta : null;
  }

  function setHint(text) {
    var el = document.getElementById("map-hint");
    if (el) { el.textContent = text || ""; }
  }

  function axesOf(gd) { return window.orientscopeMap && window.orientscopeMap.cartesianAxes(gd); }

  // The region the plot shows and its pixels, in the plot's units (log10 units of a log axis).
  function shownRegion(gd) {
    var axes = axesOf(gd);
    if (!axes) { return null; }
    var xs = [axes.x.toValue(axes.x.offset), axes.x.toValue(axes.x.offset + axes.x.length)];
    var ys = [axes.y.toValue(axes.y.offset), axes.y.toValue(axes.y.offset + axes.y.length)];
    return { x0: Math.min(xs[0], xs[1]), x1: Math.max(xs[0], xs[1]), y0: Math.min(ys[0], ys[1]),
             y1: Math.max(ys[0], ys[1]), width: Math.max(1, Math.round(axes.x.length)),
             height: Math.max(1, Math.round(axes.y.length)) };
  }

  // The grid a pick counts on: the drawn image's own over an image (the figure's, or a zoom's), the plot's pixels
  // over points.
  function pickGrid(gd, meta) {
    if (meta.mode === "image") {
      var zoomed = gd._scatterGrid;
      return zoomed && zoomed.token === meta.token ? zoomed.grid : meta.grid;
    }
    return shownRegion(gd);
  }

  // The scatter plot of `host` as the map component's surface (orientscope.js plotSurface, map_component.js): the
  // map's click (press, release, nearest, hint, chooser) and hover (preview, tooltip, card), on the scatter/ routes
  // and in the plot's units, with the grid's cell size (dx, dy) in the query.
  function surfaceOf(host) {
    function plot() { var gd = host.querySelector(".js-plotly-plot"); return scatterMeta(gd) ? gd : null; }
    return window.orientscopeMap.plotSurface(host, 1, function () {
      var gd = plot(), grid = gd && pickGrid(gd, scatterMeta(gd));
      return grid && Object.assign({ dx: (grid.x1 - grid.x0) / grid.width, dy: (grid.y1 - grid.y0) / grid.height }, grid);
    }, function () {
      var meta = scatterMeta(plot()) || {};
      return { dataset: meta.dataset, query: Object.assign({}, meta.query, meta.paint), kind: null, routes: "scatter" };
    });
  }

  function openMolecule(id) {
    setHint("");
    window.dash_clientside.set_props("selected", { data: id });
  }

  // ------------------------------------------------------------ zoom: the URL, and a region's image
  var DIGITS = 7;  // backend/figures/state.py REGION_DIGITS

  function regionText(r) {
    return [r.x0, r.x1, r.y0, r.y1].map(function (v) { return Number(v.toPrecision(DIGITS)); }).join(",");
  }

  function isHome(meta, r) {
    var h = meta.home, tx = 1e-6 * (h[1] - h[0]), ty = 1e-6 * (h[3] - h[2]);
    return Math.abs(r.x0 - h[0]) <= tx && Math.abs(r.x1 - h[1]) <= tx && Math.abs(r.y0 - h[2]) <= ty &&
      Math.abs(r.y1 - h[3]) <= ty;
  }

  function onZoom(host, gd, ev) {
    var meta = scatterMeta(gd), keys = Object.keys(ev || {});
    if (!meta || !meta.home || !keys.some(function (k) { return k.indexOf("xaxis") === 0 || k.indexOf("yaxis") === 0; })) {
      return;
    }
    var h = meta.home;
    if (ev["xaxis.autorange"] || ev["yaxis.autorange"]) {  // double-click, home: the view's home region
      window.Plotly.relayout(gd, { "xaxis.range": [h[0], h[1]], "yaxis.range": [h[2], h[3]] });
      return;
    }
    var shown = shownRegion(gd);
    if (!shown) { return; }
    if (meta.mode === "image") {  // the region's own image at the plot's size, coloured as the view
      var url = window.orientscopeMap.rest.url(meta.dataset, "scatter/image", Object.assign({}, meta.query, meta.paint, shown));
      gd._scatterGrid = { token: meta.token, grid: shown };
      window.Plotly.relayout(gd, { "images[0].source": url, "images[0].x": shown.x0, "images[0].y": shown.y1,
                                   "images[0].sizex": shown.x1 - shown.x0, "images[0].sizey": shown.y1 - shown.y0 });
    }
    var quiet = host._scatterQuiet;  // a zoom the URL asked for (the back button): the URL has it already
    host._scatterQuiet = false;
    var zoom = isHome(meta, shown) ? null : regionText(shown);
    if (!quiet && zoom !== (host._scatterZoom || null)) {  // into the URL (app/dashboard.py sync_state)
      host._scatterZoom = zoom;
      window.dash_clientside.set_props("map-zoom", { data: zoom });
    }
  }

  // The URL's zoom (the back button), drawn: called by orientscope.js applyZoom for the scatter view.
  function applyZoom(gd, meta, zoom) {
    var host = gd.closest("#orientation-map"), h = meta.home, p = zoom ? zoom.split(",").map(Number) : h;
    host._scatterZoom = zoom || null;
    var r = shownRegion(gd);
    if (r && regionText(r) === regionText({ x0: p[0], x1: p[1], y0: p[2], y1: p[3] })) { return false; }
    host._scatterQuiet = true;
    window.Plotly.relayout(gd, { "xaxis.range": [p[0], p[1]], "yaxis.range": [p[2], p[3]] });
    return true;
  }

  // The graph's element can be re-created (dcc.Loading); a light watch binds each new one once.
  setInterval(function () {
    var host = document.getElementById("orientation-map");
    var gd = host && host.querySelector(".js-plotly-plot");
    if (!gd || !gd.on || gd._scatterBound) { return; }
    gd._scatterBound = true;
    var component = window.orientscopeMap.component, surface = surfaceOf(host);
    var picks = component.picker(surface, {
      enabled: function () { return !!scatterMeta(gd); }, say: setHint, zoomable: true, panel: false,
      choose: function (id) { openMolecule(id); }
    });
    var hover = component.hover(surface, {});
    gd.addEventListener("mousedown", picks.press, true);
    gd.addEventListener("click", function (ev) { if (scatterMeta(gd)) { picks.click(ev); } });
    gd.addEventListener("mousemove", function (ev) {
      if (!scatterMeta(gd)) { return; }
      if (ev.buttons) { hover.leave(); } else { hover.move(ev); }
    });
    gd.on("plotly_relayout", function (ev) { onZoom(host, gd, ev); });
    gd.addEventListener("mouseleave", function () { if (scatterMeta(gd)) { hover.leave(); } });
  }, 200);

  window.orientscopeScatter = { applyZoom: applyZoom };
  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    scatter: {
      showControls: function (view) { return view !== "scatter"; }
    }
  });
})();
