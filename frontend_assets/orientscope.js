/* OrientScope clientside functions: render 3D viewer specs (built in Python, backend/figures/viewer.py)
   with 3Dmol.js from this folder, copy the view link, export the map. No network access. */
(function () {
  "use strict";

  // ==================================================================== plotly.js internals
  // The only code of this file that reads private plotly.js state (plotly.js 4.1.x, shipped by
  // the plotly 7.1 package that pyproject.toml pins; canary: tests/app/test_compat.py, and the
  // selection-ring browser test). plotly.js has no public way to turn data coordinates into
  // pixels; without it the selection ring would have to be part of the figure, and any figure
  // change makes plotly.js re-render every WebGL point: about 1 s per click in software WebGL
  // (UI benchmark, "click" row), against a few ms for this SVG overlay. The map's clicks, hover
  // and zoom (section "the map at any size") turn mouse pixels into map coordinates the same way.
  var plotlyInternals = {
    // {x: {offset, length, toPixel, toValue}, y: ...} of a drawn 2D cartesian plot, or null
    // (pixels relative to the plot's top-left corner; values in data units).
    cartesianAxes: function (gd) {
      var fl = gd && gd._fullLayout;
      var xa = fl && fl.xaxis, ya = fl && fl.yaxis;
      if (!xa || !ya || !xa.l2p || !(fl._has && fl._has("cartesian"))) { return null; }
      function axis(a) {
        return { offset: a._offset, length: a._length,
                 toPixel: function (v) { return a._offset + a.l2p(v); },
                 toValue: function (p) { return a.p2l(p - a._offset); } };
      }
      return { x: axis(xa), y: axis(ya) };
    },
    // dcc.Graph (Dash 4.4) answers every plotly_relayout by copying the changed layout keys into
    // its figure prop, unless that prop's layout already holds them; the copy makes it replot
    // the whole figure again (every WebGL point of the old region, 50-200 ms on full QM9 in
    // software WebGL) just as a zoom's new region arrives. `figure`, the graph's figure prop as
    // Dash holds it (heldFigure), is brought up to date with the
    // drawn axes after each plot (plotly_afterplot comes before plotly_relayout), so that
    // dcc.Graph finds nothing to copy. Dash's behaviour rather than plotly.js's, kept here with the
    // other internals; canary: test_a_zoom_draws_the_old_figure_once_and_then_the_regions_figure
    // (tests/browser/test_map_scale.py).
    keepAxesInFigure: function (gd, figure) {
      var layout = figure && figure.layout;
      if (!layout || !gd.layout) { return; }
      ["xaxis", "yaxis"].forEach(function (k) {
        var drawn = gd.layout[k];
        if (drawn && JSON.stringify(drawn) !== JSON.stringify(layout[k])) { layout[k] = JSON.parse(JSON.stringify(drawn)); }
      });
    },
    // Double-click and the modebar's home button reset the axes to the ranges of the plot's first
    // figure (plotly.js keeps them as _rangeInitial0/1 until the plot is made anew). A page opened
    // zoomed (?zoom=) would reset to that zoom: both go to the whole map instead. Canary:
    // test_double_click_and_home_return_to_the_whole_map (tests/browser/test_map_zoom.py).
    // The figure prop Dash holds for a graph (dash_component_api.getLayout, Dash 4.4), whether it came
    // with the page's layout, a callback or set_props: the page's own first figure reaches none of our
    // callbacks, and holding only the figures we handed over let the first zoom replot dcc.Graph's
    // copy (80-100 ms more on full QM9). Canary: the test above.
    heldFigure: function (id) {
      var api = window.dash_component_api, node = api && api.getLayout && api.getLayout(id);
      return (node && node.props && node.props.figure) || null;
    },
    // The cells grid of a drawn density map ({x0, dx, nx, y0, dy, ny, z}: map units, z row-major from the bottom
    // row, null where there is no density; map_component.js densityText) from its heatmap trace as plotly.js
    // decoded it (the figure's own arrays may be base64 typed arrays: reading them here would mean a second
    // decoder), or null. The hover's words then come from the map component, as the first paint's do, instead of
    // plotly's hover label. Canary: test_a_density_cell_hover_gives_the_same_words_on_the_first_paint_and_on_dashs_map
    // (tests/browser/test_map_component.py).
    densityCells: function (gd) {
      var h = ((gd && gd._fullData) || []).filter(function (t) { return t.type === "heatmap"; })[0];
      if (!h || !h.x || h.x.length < 2 || !h.y || h.y.length < 2 || !h.z) { return null; }
      var nx = h.x.length, ny = h.y.length, dx = h.x[1] - h.x[0], dy = h.y[1] - h.y[0], z = [];
      for (var j = 0; j < ny; j++) {
        for (var i = 0; i < nx; i++) {
          var v = h.z[j] && h.z[j].length !== undefined ? h.z[j][i] : h.z[j * nx + i];
          z.push(v === null || v === undefined || v !== v ? null : v);
        }
      }
      return { x0: h.x[0] - dx / 2, dx: dx, nx: nx, y0: h.y[0] - dy / 2, dy: dy, ny: ny, z: z };
    },
    setHomeRanges: function (gd, xRange, yRange) {
      var fl = gd && gd._fullLayout;
      if (!fl || !fl.xaxis || !fl.yaxis) { return; }
      fl.xaxis._rangeInitial0 = xRange[0]; fl.xaxis._rangeInitial1 = xRange[1];
      fl.yaxis._rangeInitial0 = yRange[0]; fl.yaxis._rangeInitial1 = yRange[1];
    }
  };
  // ================================================================ end of plotly.js internals
  // The scatter view's image clicks read the same axes (frontend_assets/scatter.js).
  window.orientscopeMap = Object.assign(window.orientscopeMap || {}, { cartesianAxes: plotlyInternals.cartesianAxes });

  // The 3D viewer's code is shared with the page's first paint, which may have drawn the molecule
  // viewer already (first_paint.js, loaded before this file).
  function viewerCode() { return window.orientscopeMap.viewer; }

  // The first draw in a WebGL context compiles its shaders (about 0.5 s in software GL).
  // Pay that once the map is drawn, not on the user's first click.
  var WARM_SCENE = { xyz: "2\nwarm-up\nC 0 0 0\nH 0 0 1.09\n",
                     arrows: [{ start: [0, 0, 0], end: [1, 0, 0], color: "#000000", label: "x" }] };
  function warmViewer(id, tries) {
    var el = document.getElementById(id);
    var map = document.getElementById("orientation-map");
    if (!el || el._grid) { return; }
    // the map's test hook: the interactive plot's pixels are on screen (not the page's static first paint)
    var drawn = map && map.hasAttribute("data-drawn") && !map.hasAttribute("data-first-paint");
    if (!drawn && tries > 0) {
      setTimeout(function () { warmViewer(id, tries - 1); }, 500);
      return;
    }
    // after the map's own WebGL frame is on screen, when the page is idle
    var idle = window.requestIdleCallback || function (f) { return setTimeout(f, 1); };
    requestAnimationFrame(function () {
      setTimeout(function () {
        idle(function () {
          var code = viewerCode();
          code.load().then(function () {
            if (el._grid) { return; }
            var grid = code.ensureGrid(el, { rows: 1, cols: 2, linked: true });
            grid.forEach(function (row) {
              row.forEach(function (v) { code.drawScene(v, WARM_SCENE); v.clear(); v.render(); });
            });
          }, function () {});
        }, { timeout: 3000 });
      }, 1000);
    });
  }

  // `selected`: the molecule selected now (the molecule viewer's callback passes it). A spec for
  // another one answers an earlier selection late, after a map click drew a newer one: not drawn.
  function renderViewer(spec, id, selected) {
    var el = document.getElementById(id), code = viewerCode();
    if (!el) { return window.dash_clientside.no_update; }
    if (el.closest("[data-first-paint]")) {  // the page's first paint, still on screen: wait for Dash's element
      return new Promise(function (resolve) {
        setTimeout(function () { resolve(renderViewer(spec, id, selected)); }, 20);
      });
    }
    code.takeOver(el);
    if (selected && spec && spec.molecule && String(spec.molecule) !== String(selected)) {
      return window.dash_clientside.no_update;
    }
    if (!spec || !spec.scenes || !spec.scenes.length) {
      if (el._fromFirstPaint) { return window.dash_clientside.no_update; }  // until Dash opens that molecule too
      if (!el._grid && id === "molecule-viewer") { setTimeout(function () { warmViewer(id, 40); }, 1000); }
      if (el._grid) { el._grid.forEach(function (row) { row.forEach(function (v) { v.clear(); v.render(); }); }); }
      if (el._captions) { el._captions.innerHTML = ""; }
      el._shownKey = null;
      el.removeAttribute("data-molecule");
      return null;
    }
    el._fromFirstPaint = false;
    if (typeof $3Dmol === "undefined") {
      return code.load().then(function () { return renderViewer(spec, id, selected); }, function () {
        el.textContent = "3Dmol.js did not load";
        return null;
      });
    }
    return code.draw(el, spec);
  }

  // The selected molecule's ring: on the flat views the map component's SVG overlay (map_component.js ring), at
  // its points (map units, as backend/figures/mapfigure.py selected_ring gives them); on the 3D sphere a trace
  // of the scene (sphere_ring.js), which moves with the camera.
  function placeRing(host) {
    var gd = host.querySelector(".js-plotly-plot"), points = host._ring || [];
    if (gd.data && gd.data.some(function (t) { return t.type === "scatter3d"; })) {  // the 3D sphere
      window.orientscopeMap.component.ring(host, []);
      return window.orientscopeSphereRing(gd, points);
    }
    var surface = mapOf(host).surface;
    return window.orientscopeMap.component.ring(host, points.map(function (p) {
      return p[0] === null || p[1] === null ? null : surface.toPixel(p[0] / MAP_SCALE, p[1] / MAP_SCALE);
    }));
  }

  function markSelected(points, id) {
    var host = document.getElementById(id);
    if (!host) { return window.dash_clientside.no_update; }
    host._ring = points || [];
    var gd = host.querySelector(".js-plotly-plot");
    if (!(gd && gd.on)) {  // the graph has not mounted yet
      host._ringTries = (host._ringTries || 0) + 1;
      if (host._ringTries < 100) { setTimeout(function () { markSelected(host._ring, id); }, 200); }
      return window.dash_clientside.no_update;
    }
    host._ringTries = 0;
    if (!gd._ringBound) {
      gd._ringBound = true;
      var again = function () { placeRing(host); };
      ["plotly_afterplot", "plotly_relayout", "plotly_relayouting", "plotly_redraw"].forEach(function (ev) { gd.on(ev, again); });
      window.addEventListener("resize", again);
    }
    return placeRing(host);
  }

  // The axes checklist: its last ticked box is disabled (a map of no axis shows nothing), with a hint.
  function keepOneAxis(value, options) {
    var last = value && value.length === 1 ? value[0] : null;
    var next = (options || []).map(function (o) {
      return Object.assign({}, o, { disabled: o.value === last });
    });
    return [next, last ? "at least one axis stays shown" : ""];
  }

  function copyLink(n) {
    var url = window.location.href;
    var done = function () { return "link copied"; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(url).catch(function () {});
    } else {
      var t = document.createElement("textarea");
      t.value = url; document.body.appendChild(t); t.select();
      try { document.execCommand("copy"); } catch (e) { /* clipboard unavailable */ }
      document.body.removeChild(t);
    }
    window.__orientscopeCopied = url;
    return done();
  }

  function exportMap(png, svg, state) {
    var trig = window.dash_clientside.callback_context.triggered;
    var format = trig.length && trig[0].prop_id.indexOf("export-svg") === 0 ? "svg" : "png";
    var gd = document.querySelector("#orientation-map .js-plotly-plot");
    if (!gd || !window.Plotly) { return window.dash_clientside.no_update; }
    var name = "orientscope-" + ((state && state.dataset) || "map") + "-map";
    window.Plotly.downloadImage(exportFigure(gd), { format: format, filename: name, width: 1400, height: 760 });
    return format;
  }

  // POST a dcc.Upload's file and text fields as multipart to the REST API (the upload page and the
  // model audit): {body} on 202, else {error} naming the refusal.
  async function postUpload(path, contents, filename, fields, token) {
    // Decode the data URL by hand: the page's CSP (connect-src 'self') forbids fetch("data:...").
    var binary = atob(contents.slice(contents.indexOf(",") + 1));
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) { bytes[i] = binary.charCodeAt(i); }
    var form = new FormData();
    form.append("file", new Blob([bytes]), filename);
    Object.keys(fields).forEach(function (k) { form.append(k, fields[k]); });
    var headers = token ? { "Authorization": "Bearer " + token } : {};
    var response;
    try {
      response = await fetch(path, { method: "POST", body: form, headers: headers });
    } catch (err) {
      return { error: "Upload failed: " + err };
    }
    var body = {};
    try { body = await response.json(); } catch (err) { body = { detail: response.statusText }; }
    if (response.status !== 202) {
      var detail = typeof body.detail === "string" ? body.detail
        : (body.detail || []).map(function (d) { return d.msg; }).join("; ");
      return { error: "Refused (" + response.status + "): " + detail };
    }
    return { body: body };
  }

  // The name of a chosen file under its drop zone (the upload page and the model audit).
  function chosenFile(filename) {
    return filename ? "Chosen: " + filename : window.dash_clientside.no_update;
  }

  // One poll of a background job or audit record at `path` (the upload page and the model audit):
  // {record, pct, text, finished}, or {error} naming `what` when it cannot be read.
  async function pollRecord(path, what) {
    var response;
    try { response = await fetch(path); } catch (err) { return { error: what + ": " + err }; }
    if (!response.ok) { return { error: what + " not found." }; }
    var record = await response.json();
    var pct = Math.round(100 * (record.progress || 0));
    var stage = record.stage ? record.stage + ": " : "";
    return {
      record: record, pct: pct, text: record.state + " — " + pct + "% — " + stage + (record.message || ""),
      finished: record.state === "done" || record.state === "failed"
    };
  }

  // ==================================================================== the map at any size
  // The server draws the map as an aggregated image above its point budget, or as the
  // region's points below it (backend/figures/mapfigure.py); layout.meta.map says which, and how many
  // distinct molecules are drawn. A click anywhere asks the server for the nearest shown
  // point within 5 px; a hover asks it for that point, its card and its pixel (one pixel grid:
  // the image's over an image, the plot's over points); zooming or panning sends the visible
  // region back so the server re-aggregates it at the plot's resolution (the density view too).
  // The click, the hover, the ring and the density words are map_component.js's, as on the first paint:
  // this section hands it the plot as a surface (plotSurface) and owns the zoom, the pan and the regions.
  var MAP_SCALE = 10000;  // map units per Mollweide unit (backend/figures/plots.py MAP_SCALE)
  // The whole map's ranges in Mollweide units (backend/figures/plots.py MAP_RANGE_X, MAP_RANGE_Y).
  var WHOLE = { x0: -2.95, x1: 2.95, y0: -1.5, y1: 1.5 };

  function plotOf(host) { return host && host.querySelector(".js-plotly-plot"); }

  function mapMeta(gd) { return gd && gd.layout && gd.layout.meta && gd.layout.meta.map; }

  // The visible region in Mollweide units and its size in pixels, from the plot's axes.
  function shownViewport(gd) {
    var axes = plotlyInternals.cartesianAxes(gd);
    var xr = gd.layout.xaxis && gd.layout.xaxis.range, yr = gd.layout.yaxis && gd.layout.yaxis.range;
    if (!axes || !xr || !yr) { return null; }
    return { x0: Math.min(xr[0], xr[1]) / MAP_SCALE, x1: Math.max(xr[0], xr[1]) / MAP_SCALE,
             y0: Math.min(yr[0], yr[1]) / MAP_SCALE, y1: Math.max(yr[0], yr[1]) / MAP_SCALE,
             width: Math.max(1, Math.round(axes.x.length)), height: Math.max(1, Math.round(axes.y.length)) };
  }

  // Mollweide (x, y) under a mouse event, or null outside the plot area.
  function eventPoint(gd, ev) {
    var axes = plotlyInternals.cartesianAxes(gd);
    if (!axes) { return null; }
    var box = gd.getBoundingClientRect();
    var px = ev.clientX - box.left, py = ev.clientY - box.top;
    if (px < axes.x.offset || px > axes.x.offset + axes.x.length ||
        py < axes.y.offset || py > axes.y.offset + axes.y.length) { return null; }
    return { x: axes.x.toValue(px) / MAP_SCALE, y: axes.y.toValue(py) / MAP_SCALE, px: px, py: py };
  }

  function mapUrl(meta, path, extra) {
    return window.orientscopeMap.rest.url(meta.dataset, path, Object.assign({}, meta.query, extra));
  }

  function setHint(text) {
    var el = document.getElementById("map-hint");
    if (el) { el.textContent = text || ""; }
  }

  function getJson(url) { return window.orientscopeMap.rest.getJson(url); }

  // The pixel grid a pick counts on: over an aggregated image, the image's own grid (meta.grid, the pixels
  // drawn, whose counts the hover reads); over real points, the plot's pixels.
  function pickGrid(gd, meta) {
    return meta && meta.mode === "image" && meta.grid ? meta.grid : shownViewport(gd);
  }

  // The views whose hover and clicks the server picks on the Mollweide plane (the sphere's are plotly.js's
  // picking; the scatter view's go to its own routes, frontend_assets/scatter.js).
  function picksOnMap(meta) { return !!meta && (meta.view === "map" || meta.view === "density"); }

  // The plot's top-left corner in its host's pixels (the overlays, tooltip and card are the host's children).
  function plotOffset(host, gd) {
    var hostBox = host.getBoundingClientRect(), box = gd.getBoundingClientRect();
    return { left: box.left - hostBox.left, top: box.top - hostBox.top };
  }

  // A plotly.js 2D plot in `host` as the map component's surface (map_component.js), read from the plot on screen
  // at each call: the graph element can be made anew (dcc.Loading) and its figure changes with every zoom.
  // `scale`: plot units per surface unit (MAP_SCALE on the map; 1 on the scatter view, scatter.js); grid() and
  // source(): the view's pick grid and REST source.
  function plotSurface(host, scale, grid, source) {
    function plot() {
      var gd = plotOf(host), axes = plotlyInternals.cartesianAxes(gd);
      return axes && { axes: axes, off: plotOffset(host, gd) };
    }
    function inside(axes, px, py) {
      return px >= axes.x.offset && px <= axes.x.offset + axes.x.length &&
        py >= axes.y.offset && py <= axes.y.offset + axes.y.length;
    }
    return {
      host: host, grid: grid, source: source,
      toMap: function (ev) {
        var at = plot(), hostBox = host.getBoundingClientRect();
        if (!at) { return null; }
        var px = ev.clientX - hostBox.left - at.off.left, py = ev.clientY - hostBox.top - at.off.top;
        if (!inside(at.axes, px, py)) { return null; }
        return { x: at.axes.x.toValue(px) / scale, y: at.axes.y.toValue(py) / scale,
                 px: at.off.left + px, py: at.off.top + py };
      },
      toPixel: function (x, y) {
        var at = plot();
        if (!at || x === null || y === null) { return null; }
        var px = at.axes.x.toPixel(x * scale), py = at.axes.y.toPixel(y * scale);
        return inside(at.axes, px, py) ? { px: at.off.left + px, py: at.off.top + py } : null;
      }
    };
  }
  window.orientscopeMap.plotSurface = plotSurface;

  // The map's or the density view's surface.
  function mapSurface(host) {
    return plotSurface(host, MAP_SCALE, function () { var gd = plotOf(host); return pickGrid(gd, mapMeta(gd)); },
                       function () {
                         var meta = mapMeta(plotOf(host)) || {};
                         return { dataset: meta.dataset, query: meta.query,
                                  kind: meta.view === "map" ? meta.kind || "color" : null };
                       });
  }

  // A density map's cells, read once per figure (its token) from the heatmap plotly.js drew.
  function densityCells(host) {
    var gd = plotOf(host), meta = mapMeta(gd);
    if (!meta || meta.view !== "density") { return null; }
    if (host._cellsToken !== meta.token) {
      host._cellsToken = meta.token;
      host._cells = plotlyInternals.densityCells(gd);
    }
    return host._cells;
  }

  // The density view's other map: the control's beside the dataset's, and the dataset's beside the control's.
  function otherDensity(host) {
    var main = document.getElementById("orientation-map"), control = document.getElementById("control-map");
    var other = host === main ? control : main, cells = other && densityCells(other);
    return cells && densityCells(host) ? { surface: mapOf(other).surface, cells: cells } : null;
  }

  // A click's fast path. The press asks the server for the nearest shown point within 5 px and for that
  // molecule's panel (map_component.js picker); the release draws it in the panel, and only after that frame
  // does Dash hear of it (the "selected" store), whose callbacks then fill in the URL, the ring and the
  // neighbour lists. Through Dash alone the viewer waited for the URL callback, the molecule callback and
  // often the neighbour lists' re-render: on full QM9 (UI benchmark's clicks, 6 alternating runs of 7 on a busy
  // machine, load 7-12) 382 ms median through Dash against 105 ms this way.
  // The host's surface, picker and hover, made once per host.
  function mapOf(host) {
    if (!host._map) {
      var component = window.orientscopeMap.component, surface = mapSurface(host);
      host._map = {
        surface: surface,
        picks: component.picker(surface, {
          enabled: function () { return picksOnMap(mapMeta(plotOf(host))); },
          say: setHint, zoomable: true,
          choose: function (id, hit, panel, ev, current) { openMolecule(host, id, panel, current); }
        }),
        hover: component.hover(surface, {
          cells: function () { return densityCells(host); },
          other: function () { return otherDensity(host); }
        })
      };
    }
    return host._map;
  }

  // Tell Dash once the frame with the drawn molecule is on screen, so that its work (requests,
  // React re-renders) does not hold that frame back.
  function afterFrame(fn) {
    requestAnimationFrame(function () { setTimeout(fn, 0); });
  }

  // Opens molecule `id`: its panel (id, info, viewer) drawn from the panel route's answer (null: Dash
  // fills it in), then Dash told, unless a later click took over (`current`).
  function openMolecule(host, id, panel, current) {
    setHint("");
    var explore = host.closest(".explore");
    if (explore) { explore.classList.add("has-molecule"); }  // the density view shows its panel (style.css)
    var clientside = window.dash_clientside, spec = panel && panel.viewer;
    var drawn = spec ? renderViewer(spec, "molecule-viewer") : null;
    Promise.resolve(drawn).then(function () {
      afterFrame(function () {
        if (!current()) { return; }
        if (spec) {
          clientside.set_props("molecule-id", { children: panel.molecule_id });
          clientside.set_props("molecule-info", { children: panel.info });
        }
        clientside.set_props("selected", { data: id });
      });
    });
  }

  // The hover: the map's words and card, or the density view's cell words beside the other map's (map_component.js);
  // the sphere's is plotly.js's picking (bindSphere), the scatter view's scatter.js's (the same component, on the
  // same tooltip: left alone here), and a drag (a pan, a box) shows none.
  function onMapHover(host, ev) {
    var meta = mapMeta(plotOf(host)), hover = mapOf(host).hover;
    if (meta && meta.view === "scatter") { return; }
    if (ev.buttons || !picksOnMap(meta)) { hover.leave(); return; }
    hover.move(ev);
  }

  // The sphere's card (its tooltip is plotly.js's label) put away, and its pending rest.
  function hidePreview(host) {
    clearTimeout(host._previewTimer);
    window.orientscopeMap.component.hide(host);
  }

  // The sphere's hover is plotly's picking: its label names the molecule of the dot under the cursor
  // (the points trace's text), and the preview shows that molecule after the same rest.
  function bindSphere(host, gd) {
    if (host._sphereBound === gd) { return; }
    host._sphereBound = gd;  // the same element may show the flat map later: its handlers ask the view
    var at = null;
    gd.addEventListener("mousemove", function (ev) {
      var box = host.getBoundingClientRect();
      at = { px: ev.clientX - box.left, py: ev.clientY - box.top };
    });
    gd.on("plotly_hover", function (e) {
      var pt = e && e.points && e.points[0], meta = mapMeta(gd);
      if (!meta || meta.view !== "sphere") { return; }
      var kind = pt && pt.data && pt.data.meta && pt.data.meta.kind;
      clearTimeout(host._previewTimer);
      if ((kind !== "points" && kind !== "highlight") || pt.text === undefined || !at) { hidePreview(host); return; }
      var p = at, id = String(pt.text);
      // the card describes the hovered dot's axis (its customdata), not the molecule's first shown point
      var query = pt.customdata ? Object.assign({ axis: pt.customdata }, meta.query) : meta.query;
      var component = window.orientscopeMap.component;
      host._previewTimer = setTimeout(function () {
        component.showCard(host, p, null, id, { dataset: meta.dataset, query: query });
      }, component.HOVER_MS);
    });
    gd.on("plotly_unhover", function () { if ((mapMeta(gd) || {}).view === "sphere") { hidePreview(host); } });
    gd.addEventListener("mouseleave", function () { hidePreview(host); });
  }

  function sameViewport(a, b) {
    if (!a || !b) { return false; }
    var tol = 1e-6 * Math.max(1, Math.abs(a.x1 - a.x0));
    return ["x0", "x1", "y0", "y1"].every(function (k) { return Math.abs(a[k] - b[k]) <= tol; }) &&
      a.width === b.width && a.height === b.height;
  }

  function wholeRanges() {
    return { "xaxis.range": [WHOLE.x0 * MAP_SCALE, WHOLE.x1 * MAP_SCALE],
             "yaxis.range": [WHOLE.y0 * MAP_SCALE, WHOLE.y1 * MAP_SCALE] };
  }

  // Whether a viewport shows the whole map (or more).
  function isWhole(vp) {
    var tol = 1e-3;
    return vp.x0 <= WHOLE.x0 + tol && vp.x1 >= WHOLE.x1 - tol && vp.y0 <= WHOLE.y0 + tol && vp.y1 >= WHOLE.y1 - tol;
  }

  // Whether the region a figure was drawn for covers what the plot shows of the map (within a pixel):
  // plotly.js widens one axis to keep the map's aspect, and a plot of another size than the one
  // drawn for shows more than the figure holds.
  function covers(drawn, shown) {
    if (!drawn || !shown) { return true; }
    var tx = (drawn.x1 - drawn.x0) / drawn.width, ty = (drawn.y1 - drawn.y0) / drawn.height;
    return drawn.x0 <= Math.max(shown.x0, WHOLE.x0) + tx && drawn.x1 >= Math.min(shown.x1, WHOLE.x1) - tx &&
      drawn.y0 <= Math.max(shown.y0, WHOLE.y0) + ty && drawn.y1 >= Math.min(shown.y1, WHOLE.y1) - ty;
  }

  // The URL's zoom of a region (backend/figures/state.py zoom_text), null for the whole map.
  function zoomText(vp) {
    return isWhole(vp) ? null : [vp.x0, vp.x1, vp.y0, vp.y1].map(function (v) { return v.toFixed(4); }).join(",");
  }

  // ------------------------------------------------------------ box-zoom keeps the box drawn
  // With the axes tied (scaleanchor), plotly.js widens a zoom box to the plot's aspect by stretching one of its
  // sides: a tall box drawn at the left of the map grew to the right only. The box the mouse drew is kept
  // instead, widened (or heightened) about its own centre, as much on each side.
  var BOX_MIN_PX = 4;

  // On a press with the zoom tool: where the box starts, in map units (the axes as they are before the zoom).
  function startBox(host, gd, ev) {
    host._box = null;
    if (ev.button !== 0 || !gd.layout || gd.layout.dragmode !== "zoom") { return; }
    var p = eventPoint(gd, ev);
    if (p) { host._box = { start: p, end: null }; }
  }

  // On the release (before plotly.js's zoom, whose relayout comes after): where the box ends.
  function endBox(host, gd, ev) {
    var box = host._box;
    if (!box || box.end) { return; }
    var axes = plotlyInternals.cartesianAxes(gd), r = gd.getBoundingClientRect();
    var px = Math.min(Math.max(ev.clientX - r.left, axes.x.offset), axes.x.offset + axes.x.length);
    var py = Math.min(Math.max(ev.clientY - r.top, axes.y.offset), axes.y.offset + axes.y.length);
    if (Math.abs(px - box.start.px) < BOX_MIN_PX || Math.abs(py - box.start.py) < BOX_MIN_PX) { host._box = null; return; }
    box.end = { x: axes.x.toValue(px) / MAP_SCALE, y: axes.y.toValue(py) / MAP_SCALE, at: performance.now() };
  }

  // The drawn box (map units) widened about its centre to a region of the plot's aspect, as plotly.js ranges.
  function keptBox(gd, box) {
    var axes = plotlyInternals.cartesianAxes(gd);
    var x0 = Math.min(box.start.x, box.end.x), x1 = Math.max(box.start.x, box.end.x);
    var y0 = Math.min(box.start.y, box.end.y), y1 = Math.max(box.start.y, box.end.y);
    var aspect = axes.x.length / axes.y.length, w = x1 - x0, h = y1 - y0;
    if (w / h < aspect) { w = h * aspect; } else { h = w / aspect; }
    var cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
    return { "xaxis.range": [(cx - w / 2) * MAP_SCALE, (cx + w / 2) * MAP_SCALE],
             "yaxis.range": [(cy - h / 2) * MAP_SCALE, (cy + h / 2) * MAP_SCALE] };
  }

  // Whether a relayout is plotly.js's zoom of a box the mouse drew; if so the box is drawn as kept, and the
  // relayout that makes brings the region's figure.
  function keepBox(host, gd) {
    var box = host._box;
    host._box = null;
    if (!box || !box.end || performance.now() - box.end.at > 1000) { return false; }  // not this relayout's box
    window.Plotly.relayout(gd, keptBox(gd, box));
    return true;
  }

  function onRelayout(host, ev) {
    var keys = Object.keys(ev || {});
    if (!keys.some(function (k) { return k.indexOf("xaxis") === 0 || k.indexOf("yaxis") === 0; })) { return; }
    var gd = plotOf(host), meta = mapMeta(gd);
    if (!meta || (meta.view !== "map" && meta.view !== "density")) { host._box = null; return; }
    if (ev["xaxis.autorange"] || ev["yaxis.autorange"]) {  // autoscale: the data's extent is the drawn region's
      host._box = null;
      window.Plotly.relayout(gd, wholeRanges());
      return;
    }
    if (keepBox(host, gd)) { return; }
    var quiet = host._quietZoom;  // a zoom the URL asked for (the back button): the URL has it already
    host._quietZoom = false;
    if (sameViewport(shownViewport(gd), meta.viewport)) { return; }  // nothing new to draw
    var vp = shownViewport(gd);
    if (vp && meta.state) { drawRegion(host, meta.state, vp, quiet); }
  }

  function drawRegion(host, state, vp, quiet) {
    host.removeAttribute("data-drawn");
    host.removeAttribute("data-mode");
    host._askedViewport = vp;  // until then no figure of another region counts as drawn
    host._mapToken = null;  // nor does the one on screen when its pending hook fires
    window.orientscopeMap.component.hide(host);
    askRegion(host, state, vp, quiet);
  }

  // The zoom store changed: the back or forward button restored a URL (sync_state copies its zoom
  // there), or a drawn region was written to it (then it matches what is shown and nothing happens).
  // `state`: the map-state store; a zoom dropped as the view changes is not drawn in the view on screen.
  function applyZoom(zoom, id, state) {
    var host = document.getElementById(id), gd = plotOf(host), meta = mapMeta(gd);
    var clientside = window.dash_clientside;
    if (!host || !meta || !gd.layout || (state && state.view !== meta.view)) { return clientside.no_update; }
    if (meta.view === "scatter" && window.orientscopeScatter) {  // its own units (frontend_assets/scatter.js)
      return window.orientscopeScatter.applyZoom(gd, meta, zoom) ? zoom || "" : clientside.no_update;
    }
    if (meta.view !== "map" && meta.view !== "density") { return clientside.no_update; }
    host._zoom = zoom || null;
    var shown = shownViewport(gd);
    if (!shown || zoomText(shown) === host._zoom) { return clientside.no_update; }
    var p = zoom ? zoom.split(",").map(Number) : null;
    var ranges = p ? { "xaxis.range": [p[0] * MAP_SCALE, p[1] * MAP_SCALE],
                       "yaxis.range": [p[2] * MAP_SCALE, p[3] * MAP_SCALE] } : wholeRanges();
    host._quietZoom = true;
    window.Plotly.relayout(gd, ranges);
    return zoom || "";
  }

  // The zoomed region's figure, asked for at once and straight from the REST API (GET .../map/figure, or
  // .../map/cells for the density view's pair): through Dash's viewport store the request left only after
  // dcc.Graph had replotted its echo of the old figure (every WebGL point again) and Dash had dispatched the
  // callback. plotly.js fires plotly_relayout once per drag and already gathers a wheel's ticks; of several
  // answers in flight only the newest zoom's is drawn. `state`: the map-state store's view and REST query.
  var REGION_QUERY = ["axes", "color", "grouping", "group", "smarts", "table"];

  function regionUrl(state, vp) {
    var query = {};
    REGION_QUERY.forEach(function (k) { if (state[k] !== null && state[k] !== undefined) { query[k] = state[k]; } });
    return mapUrl({ dataset: state.dataset, query: query }, state.view === "density" ? "map/cells" : "map/figure", vp);
  }

  function askRegion(host, state, vp, quiet) {
    var seq = host._regionSeq = (host._regionSeq || 0) + 1;
    var clientside = window.dash_clientside;
    getJson(regionUrl(state, vp)).then(function (answer) {
      if (seq !== host._regionSeq) { return; }  // a later zoom took over
      clientside.set_props("map-viewport", { data: vp });  // a new colour or filter keeps this region
      var figure = answer && (answer.figure || answer.dataset);
      if (answer && answer.control) {  // the density view: both maps, binned anew for the region
        clientside.set_props("control-map", { figure: answer.control });
      }
      if (figure) {
        (figure.layout.images || []).forEach(function (im) { im.source = asBlobUrl(im.source); decoded(im.source); });
        clientside.set_props("orientation-map", { figure: figure });
        // Watched from here at once: Dash dispatches the figure's own watch (its callback) only after
        // it has rendered the graph, 30 to 370 ms after plotly.js drew the region on a loaded machine.
        watchMap(figure, host.id);
      }
      var zoom = zoomText(vp);
      if (!quiet && zoom !== (host._zoom || null)) {  // into the URL (app/dashboard.py sync_state), a history entry
        host._zoom = zoom;
        clientside.set_props("map-zoom", { data: zoom });
      }
    }, function () {});  // the server is gone: the old figure stays, zoomed
  }

  // A press, a release and a click on a plot whose clicks the server picks (the map, the density view's two
  // maps): the pick, and the box a zoom draws.
  function bindPicks(host, gd) {
    host._boundPlot = gd;
    var picks = mapOf(host).picks;
    gd.addEventListener("mousedown", function (ev) { picks.press(ev); startBox(host, gd, ev); }, true);
    // the release may land outside the plot (plotly.js follows the drag on the document): heard first, on the window
    window.addEventListener("mouseup", function (ev) { if (host._boundPlot === gd) { endBox(host, gd, ev); } }, true);
    gd.addEventListener("click", picks.click);
  }

  function bindMap(host, gd) {
    if (host._boundPlot === gd) { return; }
    bindPicks(host, gd);
    gd.addEventListener("mousemove", function (ev) { onMapHover(host, ev); });
    gd.addEventListener("mouseleave", function () { mapOf(host).hover.leave(); });
    gd.on("plotly_relayout", function (ev) { onRelayout(host, ev); });
    gd.on("plotly_afterplot", function () {
      var fig = plotlyInternals.heldFigure(host.id), meta = mapMeta(gd);
      if (meta && meta.token === (mapMeta(fig) || {}).token) { plotlyInternals.keepAxesInFigure(gd, fig); }
      var home = wholeRanges();
      plotlyInternals.setHomeRanges(gd, home["xaxis.range"], home["yaxis.range"]);
    });
    var home = wholeRanges();
    plotlyInternals.setHomeRanges(gd, home["xaxis.range"], home["yaxis.range"]);
  }

  // Resolves once an image has been decoded, so that setting the hook means pixels are on screen. The
  // newest image's decode is kept: a zoom starts it as its answer arrives, while plotly.js draws it.
  var lastDecode = { src: null, promise: null };
  function decoded(src) {
    if (!src) { return Promise.resolve(); }
    if (lastDecode.src === src) { return lastDecode.promise; }
    var img = new Image();
    img.src = src;
    var promise = (img.decode ? img.decode() : Promise.resolve()).catch(function () {});
    lastDecode = { src: src, promise: promise };
    return promise;
  }

  // A zoom's PNG, handed to plotly.js as a blob: URL instead of its data: URL. Chrome parses a 1 MB
  // data: URL once for plotly's <image> and once for the decode: on the 10M map a wide zoom was drawn
  // in 466 ms (median) and up to 1.3 s, against 370 ms and 0.45 s this way (12 zooms each, paired).
  // Exports put the data: URL back (exportFigure). The two newest blobs are kept, older ones freed.
  var blobSources = [];  // [{url, data}], newest last
  function asBlobUrl(src) {
    var prefix = "data:image/png;base64,";
    if (!Uint8Array.fromBase64 || typeof src !== "string" || src.indexOf(prefix) !== 0) { return src; }
    var url = URL.createObjectURL(new Blob([Uint8Array.fromBase64(src.slice(prefix.length))], { type: "image/png" }));
    blobSources.push({ url: url, data: src });
    while (blobSources.length > 2) { URL.revokeObjectURL(blobSources.shift().url); }
    return url;
  }

  // The figure on screen with its images as data: URLs again, for an export that embeds them.
  function exportFigure(gd) {
    var images = (gd.layout.images || []).map(function (im) {
      var held = blobSources.filter(function (b) { return b.url === im.source; })[0];
      return held ? Object.assign({}, im, { source: held.data }) : im;
    });
    return { data: gd.data, layout: Object.assign({}, gd.layout, { images: images }) };
  }

  // The test hook: data-drawn and data-mode on #orientation-map once this figure is on screen.
  function watchMap(figure, id) {
    var host = document.getElementById(id);
    if (!host) { return window.dash_clientside.no_update; }
    var meta = figure && figure.layout && figure.layout.meta && figure.layout.meta.map;
    // A zoom's first figure is the graph's own copy of the old one with the new axis ranges
    // (dcc.Graph echoes every relayout into its figure prop): not the region asked for, so the
    // hook waits for the server's figure of that region.
    if (meta && meta.viewport && host._askedViewport && !sameViewport(meta.viewport, host._askedViewport)) {
      return window.dash_clientside.no_update;
    }
    if (meta && meta.token === host._mapToken) { return meta.token; }  // watched already (askRegion), or drawn
    host.removeAttribute("data-drawn");
    host.removeAttribute("data-mode");
    if (!meta) { return null; }
    var token = meta.token;
    host._mapToken = token;
    var tries = 0, found = false, armed = null;
    (function wait() {
      if (found || host._mapToken !== token) { return; }  // seen already, or a newer figure took over
      var gd = plotOf(host);
      if (!(gd && gd.on && (mapMeta(gd) || {}).token === token)) {  // Plotly has not taken this figure yet
        // plotly.js's own "drawn" event, at once; the poll also finds a graph element made anew (dcc.Loading),
        // and on a loaded machine its timer ran 50 to 120 ms after the event
        if (gd && gd.once && armed !== gd) { armed = gd; gd.once("plotly_afterplot", function () { armed = null; wait(); }); }
        if (++tries < 1200) { setTimeout(wait, 25); }
        return;
      }
      found = true;
      setHint("");  // a click's hint ("no molecule within 5 px") was about the figure before this one
      if (meta.view === "sphere") { bindSphere(host, gd); } else if (meta.view !== "scatter") { bindMap(host, gd); }  // scatter: scatter.js
      var shown = meta.view === "map" ? shownViewport(gd) : null;
      if (shown && meta.state && !covers(meta.viewport, shown)) {  // e.g. a page opened zoomed, on a plot of another size
        drawRegion(host, meta.state, shown, true);
        return;
      }
      var images = (gd.layout.images || []).map(function (im) { return decoded(im.source); });
      Promise.all(images).then(function () {
        requestAnimationFrame(function () {
          requestAnimationFrame(function () {  // the frame with the new pixels has been painted
            if (host._mapToken !== token) { return; }
            host.setAttribute("data-mode", meta.mode);
            host.setAttribute("data-drawn", meta.drawn);
          });
        });
      });
    })();
    return token;
  }
  // Dash does not run watchMap for the figure a page's layout already holds (its Output is
  // another callback's Input), and the loading wrapper may re-create the map's element; a
  // light watchdog picks up any drawn figure that no watch has claimed.
  setInterval(function () {
    var host = document.getElementById("orientation-map"), gd = plotOf(host), meta = mapMeta(gd);
    if (host && host._mapToken === undefined && meta) { watchMap({ layout: gd.layout }, "orientation-map"); }
  }, 100);
  // ------------------------------------------------------------ the density view's control map, linked
  // Its zoom is the dataset's map's (a box or a pan there zooms both, binned anew for the region), its hover
  // shows the card of the control molecule there and the dataset's density at the same place, and a click
  // opens the control molecule it picks (the same molecules, randomly rotated: the control's own positions).
  function bindControl(host, gd) {
    if (host._boundPlot === gd) { return; }
    bindPicks(host, gd);
    gd.addEventListener("mousemove", function (ev) { onMapHover(host, ev); });
    gd.addEventListener("mouseleave", function () { mapOf(host).hover.leave(); });
    gd.on("plotly_relayout", function (ev) { followControl(host, gd, ev); });
  }

  // A zoom or pan of the control map, made the dataset map's (whose relayout then draws both).
  function followControl(host, gd, ev) {
    var keys = Object.keys(ev || {}), main = plotOf(document.getElementById("orientation-map"));
    if (!keys.some(function (k) { return k.indexOf("xaxis") === 0 || k.indexOf("yaxis") === 0; })) { return; }
    if (!main || (mapMeta(gd) || {}).view !== "density") { host._box = null; return; }
    if (ev["xaxis.autorange"] || ev["yaxis.autorange"]) { host._box = null; window.Plotly.relayout(main, wholeRanges()); return; }
    var box = host._box;
    host._box = null;
    var ranges = box && box.end && performance.now() - box.end.at < 1000 ? keptBox(gd, box)
      : { "xaxis.range": gd.layout.xaxis.range.slice(), "yaxis.range": gd.layout.yaxis.range.slice() };
    window.Plotly.relayout(main, ranges);
  }

  setInterval(function () {
    var host = document.getElementById("control-map"), gd = plotOf(host);
    if (gd && gd.on && (mapMeta(gd) || {}).view === "density") { bindControl(host, gd); }
  }, 200);
  // ================================================================ end of the map at any size

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    orientscope: {
      renderViewer: renderViewer, markSelected: markSelected, copyLink: copyLink, exportMap: exportMap,
      postUpload: postUpload, chosenFile: chosenFile, pollRecord: pollRecord, watchMap: watchMap,
      applyZoom: applyZoom, keepOneAxis: keepOneAxis
    }
  });
})();
