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
  // (UI benchmark, "click" row), against a few ms for this SVG overlay. The scatter view's clicks,
  // hover and zoom (scatter.js, through plotSurface) turn mouse pixels into its units the same way.
  // The plane views (map, density) are no plotly.js plot: map_draw.js draws them.
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

  // The selected molecule's ring, the renderer's (map_draw.js or map_sphere.js, placed again at every zoom or turn): at
  // its points, map units on the plane views and unit vectors on the sphere (backend/figures/mapfigure.py
  // selected_ring). Kept on the host for a drawing not made yet (drawPlane rings it).
  function markSelected(points, id) {
    var host = document.getElementById(id);
    if (!host) { return window.dash_clientside.no_update; }
    host._ring = points || [];
    if (host._mapHandle) { host._mapHandle.ring(host._ring); }
    return host._ring.length;
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
    var host = document.getElementById("orientation-map"), handle = host && host._mapHandle;
    if (handle) { handle.save(format); return format; }  // the renderer's export of what is shown
    var gd = host && host.querySelector(".js-plotly-plot");
    if (!gd || !window.Plotly) { return window.dash_clientside.no_update; }
    var name = "orientscope-" + ((state && state.dataset) || "map") + "-map";
    window.Plotly.downloadImage(gd, { format: format, filename: name, width: 1400, height: 760 });
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

  // ==================================================================== the map's box
  // The flat map, the density view and the sphere are the renderer's drawing (map_draw.js, map_sphere.js), from the
  // paint store (drawPlane); the scatter view is a plotly.js graph in the same box (#orientation-graph), shown only in
  // that view. The click, the hover, the ring and the density words are map_component.js's in all of them; the
  // scatter view hands it its plot as a surface (plotSurface, scatter.js).
  var MAP_SCALE = 10000;  // map units per Mollweide unit (backend/figures/plots.py MAP_SCALE)

  function plotOf(host) { return host && host.querySelector(".js-plotly-plot"); }

  function mapMeta(gd) { return gd && gd.layout && gd.layout.meta && gd.layout.meta.map; }

  function setHint(text) {
    var el = document.getElementById("map-hint");
    if (el) { el.textContent = text || ""; }
  }

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

  // ------------------------------------------------------------ the renderer's views (map_draw.js)
  // Draws the paint store into the map's box: a new drawing, an update of the one on screen, or the page's first
  // paint's drawing taken over (the same paint: no redraw from scratch; a new one: updated). Its hooks write Dash's
  // stores: the shown region (map-viewport, so a new colour keeps it) and the URL's ?zoom= (map-zoom, a history
  // entry), a box or lasso (map-selection, the URL's sel=) and a click (the molecule's panel at once, then
  // "selected").
  function planeHooks(host) {
    var clientside = window.dash_clientside;
    return {
      say: setHint,
      onRegion: function (region) {
        var stage = host.querySelector(".map-stage");
        var size = stage ? { width: Math.max(1, Math.round(stage.clientWidth)), height: Math.max(1, Math.round(stage.clientHeight)) } : {};
        clientside.set_props("map-viewport", { data: region ? Object.assign({}, region, size) : null });
        var zoom = window.orientscopeMap.draw.zoomText(region) || null;
        if (zoom !== (host._zoom || null)) {  // into the URL (app/dashboard.py sync_state): a history entry
          host._zoom = zoom;
          clientside.set_props("map-zoom", { data: zoom });
        }
      },
      onSelect: function (polygon, kind) {
        clientside.set_props("map-selection", { data: window.orientscopeMap.draw.selectionText(polygon, kind) });
      },
      choose: function (id, hit, panel, ev, current) { openMolecule(host, id, panel, current); }
    };
  }

  function drawPlane(paint, id) {
    var host = document.getElementById(id), draw = window.orientscopeMap.draw;
    if (!host) { return window.dash_clientside.no_update; }
    var handle = host._mapHandle, handed;
    if (!paint) {  // the scatter view: the graph shows
      if (handle) { handle.destroy(); }
      return null;
    }
    var token = paint.hook && paint.hook.token;
    if (!handle || (handle.paint().hook || {}).token !== token) { setHint(""); }  // a click's hint was about another
    if (handle && handle.paint().view === paint.view) {
      if ((handle.paint().hook || {}).token !== token) { handle.update(paint); }
    } else {
      if (handle) { handle.destroy(); }
      var first = window.orientscopeMap.firstPaintMap;  // the page's first paint (first_paint.js), if it drew this view
      window.orientscopeMap.firstPaintMap = null;
      if (first && first.paint().view === paint.view) {
        first.moveTo(host, planeHooks(host));
        // a box or lasso drawn on the first paint (first_paint.js wrote it into the URL; Dash's layout may have been
        // asked for before that): into Dash's selection store, which lists its molecules
        handed = window.orientscopeMap.firstPaintSelection;
        window.orientscopeMap.firstPaintSelection = undefined;
        if ((first.paint().hook || {}).token !== token) { first.update(paint); }
      } else {
        draw(host, paint, planeHooks(host));
      }
      handle = host._mapHandle;
    }
    host._zoom = draw.zoomText(handle.region()) || null;
    if (handed !== undefined) { window.dash_clientside.set_props("map-selection", { data: handed }); }
    var sel = handed !== undefined ? handed : new URLSearchParams(window.location.search).get("sel");
    handle.showSelection(draw.selectionVertices(sel));
    if (host._ring) { handle.ring(host._ring); }
    return token || null;
  }

  // The zoom store changed: the back or forward button restored a URL (sync_state copies its zoom there), or a
  // settled zoom was written to it (then it matches what is shown and nothing happens). `state`: the map-state
  // store; a zoom dropped as the view changes is not drawn in the view on screen.
  function applyZoom(zoom, id, state) {
    var host = document.getElementById(id), clientside = window.dash_clientside;
    if (!host) { return clientside.no_update; }
    var handle = host._mapHandle, gd = plotOf(host), meta = mapMeta(gd);
    if (!handle && meta && meta.view === "scatter" && window.orientscopeScatter && (!state || state.view === "scatter")) {
      return window.orientscopeScatter.applyZoom(gd, meta, zoom) ? zoom || "" : clientside.no_update;  // its own units
    }
    if (!handle || (state && state.view !== handle.paint().view)) { return clientside.no_update; }
    var draw = window.orientscopeMap.draw;
    if ((zoom || null) === (draw.zoomText(handle.region()) || null)) { return clientside.no_update; }
    host._zoom = zoom || null;  // the URL has it already: the settled zoom writes no history entry
    handle.zoom(draw.zoomRegion(zoom));
    return zoom || "";
  }

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

  // The test hook of the scatter view: data-drawn and data-mode on #orientation-map once the graph's figure is on
  // screen (the other views' is the renderer's).
  function watchMap(figure, id) {
    var host = document.getElementById(id);
    if (!host) { return window.dash_clientside.no_update; }
    var meta = figure && figure.layout && figure.layout.meta && figure.layout.meta.map;
    if (host._mapHandle || (meta && meta.view !== "scatter")) {  // the renderer's (drawPlane)
      return window.dash_clientside.no_update;
    }
    if (meta && meta.token === host._mapToken) { return meta.token; }  // watched already, or drawn
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
  // another callback's Input), and the loading wrapper may re-create the graph's element; a
  // light watchdog picks up any drawn figure that no watch has claimed.
  setInterval(function () {
    var host = document.getElementById("orientation-map"), gd = plotOf(host), meta = mapMeta(gd);
    if (host && !host._mapHandle && host._mapToken === undefined && meta) { watchMap({ layout: gd.layout }, "orientation-map"); }
  }, 100);
  // ================================================================ end of the map at any size

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    orientscope: {
      renderViewer: renderViewer, markSelected: markSelected, copyLink: copyLink, exportMap: exportMap,
      postUpload: postUpload, chosenFile: chosenFile, pollRecord: pollRecord, watchMap: watchMap,
      applyZoom: applyZoom, keepOneAxis: keepOneAxis, drawPlane: drawPlane
    }
  });
})();
