/* OrientScope clientside functions: render 3D viewer specs (built in Python, app/viewer.py)
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

  // The selected molecule's ring is an SVG overlay, not part of the figure: any figure
  // change makes plotly.js re-render all WebGL points (about 1 s in software WebGL).
  var SVG_NS = "http://www.w3.org/2000/svg";
  var RING_RADIUS = 9;

  function placeRing(host) {
    var gd = host.querySelector(".js-plotly-plot");
    var svg = host.querySelector("svg.selection-ring");
    if (!svg) {
      svg = document.createElementNS(SVG_NS, "svg");
      svg.setAttribute("class", "selection-ring");
      host.appendChild(svg);
    }
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    if (gd.data && gd.data.some(function (t) { return t.type === "scatter3d"; })) {  // the 3D sphere
      return window.orientscopeSphereRing(gd, host._ring || []);
    }
    var axes = plotlyInternals.cartesianAxes(gd);
    var points = host._ring || [];
    if (!points.length || !axes) { return 0; }
    var xa = axes.x, ya = axes.y;
    var hostBox = host.getBoundingClientRect(), box = gd.getBoundingClientRect();
    svg.style.left = (box.left - hostBox.left) + "px";
    svg.style.top = (box.top - hostBox.top) + "px";
    svg.setAttribute("width", box.width);
    svg.setAttribute("height", box.height);
    var shown = 0;
    points.forEach(function (p) {
      var px = xa.toPixel(p[0]), py = ya.toPixel(p[1]);
      // an axis the molecule's symmetry leaves undefined has no point (null or NaN): no ring
      if (p[0] === null || p[1] === null || !isFinite(px) || !isFinite(py)) { return; }
      if (px < xa.offset || px > xa.offset + xa.length || py < ya.offset || py > ya.offset + ya.length) { return; }
      var c = document.createElementNS(SVG_NS, "circle");
      c.setAttribute("cx", px); c.setAttribute("cy", py); c.setAttribute("r", RING_RADIUS);
      svg.appendChild(c);
      shown += 1;
    });
    return shown;
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
  // region's points below it (app/mapfigure.py); layout.meta.map says which, and how many
  // distinct molecules are drawn. A click anywhere asks the server for the nearest shown
  // point within 5 px; hovering the image asks it what the pixel holds; zooming or panning
  // sends the visible region back so the server re-aggregates it at the plot's resolution.
  var MAP_SCALE = 10000;  // map units per Mollweide unit (app/figures.py MAP_SCALE)
  var HOVER_MS = 120;
  // The whole map's ranges in Mollweide units (app/figures.py MAP_RANGE_X, MAP_RANGE_Y).
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
    var params = Object.assign({}, meta.query, extra);
    var q = Object.keys(params).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]);
    }).join("&");
    return "/api/datasets/" + encodeURIComponent(meta.dataset) + "/" + path + "?" + q;
  }

  function setHint(text) {
    var el = document.getElementById("map-hint");
    if (el) { el.textContent = text || ""; }
  }

  // A click's fast path. The press already asks the server for the nearest shown point within 5 px
  // (map/nearest) and for that molecule's panel (app/first_paint.py panel_json: the id, info and viewer
  // spec the molecule callback answers, the route the first paint asks too); the release draws it in the
  // panel, and only after that frame does Dash hear of it (the "selected" store), whose callbacks then
  // fill in the URL, the ring and the neighbour lists. Through Dash alone the viewer waited for the URL
  // callback, the molecule callback and often the neighbour lists' re-render: on full QM9 (UI
  // benchmark's clicks, 6 alternating runs of 7 on a busy machine, load 7-12) 382 ms median through
  // Dash against 105 ms this way.
  var PANEL_PATH = "/_first-paint/molecule-panel";

  function getJson(url) {
    return fetch(url).then(function (r) { return r.ok ? r.json() : null; });
  }

  // The query of a pick at a mouse event: the point under it and the region shown (the same for a hover
  // and a click, so that both name the same molecule: backend/services/map_pick.py). Null outside the plot.
  function pickQuery(gd, ev) {
    var p = eventPoint(gd, ev), vp = shownViewport(gd);
    return p && vp ? { p: p, params: Object.assign({ x: p.x, y: p.y }, vp) } : null;
  }

  // On a press inside the plot: {x, y} of the press and the promise of {hit, spec} (spec null when
  // no point is near, when several molecules share the point's pixel (a chooser opens), or when the spec
  // cannot be had: then Dash draws the viewer as before).
  function startPick(host, ev) {
    host._pick = null;
    var gd = plotOf(host), meta = mapMeta(gd);
    if (ev.button !== 0 || !meta || meta.view === "sphere") { return; }  // the sphere's clicks: plotly's picking
    var pq = pickQuery(gd, ev);
    if (!pq) { return; }
    var answer = getJson(mapUrl(meta, "map/nearest", pq.params)).then(function (hit) {
      if (!hit || hit.id === null || hit.shared > 1) { return { hit: hit, spec: null }; }
      return getJson(panelUrl(meta.dataset, hit.id)).then(function (panel) { return { hit: hit, spec: panel }; },
                                                           function () { return { hit: hit, spec: null }; });
    }).catch(function () { return { hit: null, spec: null }; });  // the server is gone: nothing to select
    host._pick = { x: ev.clientX, y: ev.clientY, answer: answer, meta: meta, query: pq };
  }

  function panelUrl(dataset, id) {
    return PANEL_PATH + "?dataset=" + encodeURIComponent(dataset) + "&molecule=" + encodeURIComponent(id);
  }

  // Tell Dash once the frame with the drawn molecule is on screen, so that its work (requests,
  // React re-renders) does not hold that frame back.
  function afterFrame(fn) {
    requestAnimationFrame(function () { setTimeout(fn, 0); });
  }

  // Opens molecule `id`: its panel (id, info, viewer) drawn from the panel route's answer (null: Dash
  // fills it in), then Dash told.
  function openMolecule(host, id, panel, seq) {
    setHint("");
    host.dataset.clicked = id;
    var explore = host.closest(".explore");
    if (explore) { explore.classList.add("has-molecule"); }  // the density view shows its panel (style.css)
    var clientside = window.dash_clientside, spec = panel && panel.viewer;
    var drawn = spec ? renderViewer(spec, "molecule-viewer") : null;
    Promise.resolve(drawn).then(function () {
      afterFrame(function () {
        if (seq !== host._pickSeq) { return; }
        if (spec) {
          clientside.set_props("molecule-id", { children: panel.molecule_id });
          clientside.set_props("molecule-info", { children: panel.info });
        }
        clientside.set_props("selected", { data: id });
      });
    });
  }

  function onMapClick(host, ev) {
    var pick = host._pick;
    host._pick = null;  // one pick per press: plotly.js follows a release with a click event of its own
    if (!pick || Math.abs(pick.x - ev.clientX) + Math.abs(pick.y - ev.clientY) > 4) { return; }  // the end of a pan
    var seq = host._pickSeq = (host._pickSeq || 0) + 1;
    host.dataset.clicked = "";
    closeChooser(host);
    pick.answer.then(function (a) {
      if (seq !== host._pickSeq || !a.hit) { return; }  // a later click took over, or the server said no
      var hit = a.hit;
      if (hit.id === null) {
        setHint("No molecule within 5 px of that click; click closer to a point or zoom in.");
        host.dataset.clicked = "none";
        return;
      }
      if (hit.shared > 1) {
        openChooser(host, pick.meta, pick.query, hit, seq);
        return;
      }
      openMolecule(host, hit.id, a.spec, seq);
    });
  }

  // ------------------------------------------------------------ the chooser of a shared pixel
  // Several molecules share the clicked point's pixel: a paged list (id, formula, the coloured value)
  // lets the user choose one (GET .../map/shared, the molecule the click picked first).
  var CHOOSER_PAGE = 10;

  function closeChooser(host) {
    var old = host.querySelector(".map-chooser");
    if (old) { old.remove(); }
  }

  function cell(tr, text) {
    var td = document.createElement("td");
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }

  function chooserButton(label, title, onClick) {
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.title = title;
    b.addEventListener("click", function (e) { e.stopPropagation(); onClick(); });
    return b;
  }

  function openChooser(host, meta, pq, hit, seq) {
    closeChooser(host);
    var box = document.createElement("div");
    box.className = "map-chooser";
    box.setAttribute("role", "dialog");
    box.dataset.total = hit.shared;
    var gd = plotOf(host), hostBox = host.getBoundingClientRect(), plotBox = gd.getBoundingClientRect();
    box.style.left = Math.max(0, plotBox.left - hostBox.left + pq.p.px - 140) + "px";
    box.style.top = (plotBox.top - hostBox.top + pq.p.py + 12) + "px";
    ["mousedown", "click", "mousemove"].forEach(function (t) {  // not a click or hover on the map below
      box.addEventListener(t, function (e) { e.stopPropagation(); });
    });
    var title = document.createElement("p");
    title.textContent = hit.shared + " molecules share this pixel: choose one";
    var close = chooserButton("×", "close", function () { closeChooser(host); });
    close.className = "chooser-close";
    var table = document.createElement("table");
    var pager = document.createElement("div");
    pager.className = "chooser-pager";
    box.append(close, title, table, pager);
    host.appendChild(box);
    var pages = Math.ceil(hit.shared / CHOOSER_PAGE);
    function show(page) {
      var params = Object.assign({ offset: page * CHOOSER_PAGE, limit: CHOOSER_PAGE }, pq.params);
      getJson(mapUrl(meta, "map/shared", params)).then(function (answer) {
        if (!answer || !box.isConnected) { return; }
        table.innerHTML = "";
        var head = document.createElement("tr");
        ["molecule", "formula", answer.color || "colour"].forEach(function (h) {
          var th = document.createElement("th");
          th.textContent = h;
          head.appendChild(th);
        });
        table.appendChild(head);
        answer.molecules.forEach(function (m) {
          var tr = document.createElement("tr");
          tr.className = "chooser-row";
          tr.dataset.id = m.id;
          cell(tr, "").appendChild(chooserButton(m.id, "open molecule " + m.id, function () {
            closeChooser(host);
            getJson(panelUrl(meta.dataset, m.id)).catch(function () { return null; }).then(function (panel) {
              openMolecule(host, m.id, panel, seq);
            });
          }));
          cell(tr, m.formula);
          cell(tr, typeof m.value === "number" ? m.value.toPrecision(4) : (m.value === null ? "no value" : m.value));
          table.appendChild(tr);
        });
        pager.innerHTML = "";
        var prev = chooserButton("‹", "previous page", function () { show(page - 1); });
        var next = chooserButton("›", "next page", function () { show(page + 1); });
        prev.className = "chooser-prev"; next.className = "chooser-next";
        prev.disabled = page === 0; next.disabled = page >= pages - 1;
        var where = document.createElement("span");
        where.textContent = "page " + (page + 1) + " of " + pages;
        pager.append(prev, where, next);
        box.dataset.page = page;
      });
    }
    show(0);
  }

  function tooltipOf(host) {
    var tip = host.querySelector(".map-tooltip");
    if (!tip) {
      tip = document.createElement("div");
      tip.className = "map-tooltip";
      tip.hidden = true;
      host.appendChild(tip);
    }
    return tip;
  }

  function onMapHover(host, ev) {
    var gd = plotOf(host), meta = mapMeta(gd), tip = tooltipOf(host);
    if (ev.buttons) { tip.hidden = true; hidePreview(host); return; }  // panning
    // the density view's heatmap has plotly's own hover (its cells' density); the sphere's is plotly's picking
    if (meta && meta.view === "density") { densityPreview(host, gd, meta, ev); }
    if (!meta || meta.view !== "map") { tip.hidden = true; return; }
    var pq = pickQuery(gd, ev);
    if (!pq) { tip.hidden = true; hidePreview(host); return; }
    clearTimeout(host._hoverTimer);
    host._hoverTimer = setTimeout(function () {
      var asked = host._hoverAsked = (host._hoverAsked || 0) + 1;
      // then what the image shows at the named molecule's point (at the cursor when none is near)
      getJson(mapUrl(meta, "map/preview", pq.params)).then(function (hit) {
        // the answer carries the card: drawn now, while the pixel's request is out
        if (asked === host._hoverAsked) { showPreview(host, gd, pq.p, hit); }
        if (meta.mode !== "image") { return [hit, null]; }
        var at = hit && hit.id !== null ? { x: hit.x, y: hit.y } : { x: pq.p.x, y: pq.p.y };
        var params = Object.assign(at, { kind: meta.kind || "color" }, meta.viewport);
        return getJson(mapUrl(meta, "map/pixel", params)).then(function (info) { return [hit, info]; });
      }).then(function (answers) {
        if (asked !== host._hoverAsked) { return; }  // a later hover already asked
        var hit = answers[0];
        var words = window.orientscopeMap;  // first_paint.js
        var text = [words.describeHit(hit), words.describePixel(answers[1])]
          .filter(Boolean).join(" · ");
        var hostBox = host.getBoundingClientRect(), box = gd.getBoundingClientRect();
        tip.textContent = text;
        tip.hidden = !text;
        tip.dataset.molecule = (hit && hit.id) || "";
        tip.dataset.shared = (hit && hit.shared) || "";
        tip.style.left = (box.left - hostBox.left + pq.p.px + 12) + "px";
        tip.style.top = (box.top - hostBox.top + pq.p.py + 12) + "px";
      }).catch(function () { tip.hidden = true; hidePreview(host); });
    }, HOVER_MS);
  }

  // ------------------------------------------------------------ the hover preview (hover_preview.js)
  // Where the card goes: beside plot pixel p = {px, py}, in the host's pixels.
  function previewAt(host, gd, p) {
    var hostBox = host.getBoundingClientRect(), box = gd.getBoundingClientRect();
    return { left: box.left - hostBox.left + p.px, top: box.top - hostBox.top + p.py };
  }

  // The card of a map/preview answer (none near: no card).
  function showPreview(host, gd, p, answer) {
    var preview = window.orientscopePreview;
    if (!preview) { return; }
    if (!answer || answer.id === null || answer.id === undefined) { preview.hide(host); return; }
    preview.showAnswer(host, previewAt(host, gd, p), answer);
  }

  function hidePreview(host) {
    clearTimeout(host._previewTimer);
    if (window.orientscopePreview) { window.orientscopePreview.hide(host); }
  }

  // The density view keeps plotly's hover label (the cell's density); the preview names the molecule
  // a click there opens (map/preview: map/nearest's pick, the flat map's, with the card).
  function densityPreview(host, gd, meta, ev) {
    var pq = pickQuery(gd, ev);
    clearTimeout(host._previewTimer);
    if (!pq) { hidePreview(host); return; }
    host._previewTimer = setTimeout(function () {
      var asked = host._previewAsked = (host._previewAsked || 0) + 1;
      getJson(mapUrl(meta, "map/preview", pq.params)).then(function (hit) {
        if (asked === host._previewAsked) { showPreview(host, gd, pq.p, hit); }
      }).catch(function () { hidePreview(host); });
    }, HOVER_MS);
  }

  // The sphere's hover is plotly's picking: its label names the molecule of the dot under the cursor
  // (the points trace's text), and the preview shows that molecule after the same rest.
  function bindSphere(host, gd) {
    if (host._sphereBound === gd) { return; }
    host._sphereBound = gd;  // the same element may show the flat map later: its handlers ask the view
    var at = null;
    gd.addEventListener("mousemove", function (ev) {
      var box = gd.getBoundingClientRect();
      at = { px: ev.clientX - box.left, py: ev.clientY - box.top };
    });
    gd.on("plotly_hover", function (e) {
      var pt = e && e.points && e.points[0], meta = mapMeta(gd);
      if (!meta || meta.view !== "sphere") { return; }
      var kind = pt && pt.data && pt.data.meta && pt.data.meta.kind;
      clearTimeout(host._previewTimer);
      if ((kind !== "points" && kind !== "highlight") || pt.text === undefined || !at) { hidePreview(host); return; }
      var p = at, id = String(pt.text);
      host._previewTimer = setTimeout(function () {
        if (window.orientscopePreview) { window.orientscopePreview.show(host, previewAt(host, gd, p), meta.dataset, id, meta.query); }
      }, HOVER_MS);
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

  // The URL's zoom of a region (app/state.py zoom_text), null for the whole map.
  function zoomText(vp) {
    return isWhole(vp) ? null : [vp.x0, vp.x1, vp.y0, vp.y1].map(function (v) { return v.toFixed(4); }).join(",");
  }

  function onRelayout(host, ev) {
    var keys = Object.keys(ev || {});
    if (!keys.some(function (k) { return k.indexOf("xaxis") === 0 || k.indexOf("yaxis") === 0; })) { return; }
    var gd = plotOf(host), meta = mapMeta(gd);
    if (!meta || meta.view !== "map") { return; }
    if (ev["xaxis.autorange"] || ev["yaxis.autorange"]) {  // autoscale: the data's extent is the drawn region's
      window.Plotly.relayout(gd, wholeRanges());
      return;
    }
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
    tooltipOf(host).hidden = true;
    hidePreview(host);
    askRegion(host, state, vp, quiet);
  }

  // The zoom store changed: the back or forward button restored a URL (sync_state copies its zoom
  // there), or a drawn region was written to it (then it matches what is shown and nothing happens).
  function applyZoom(zoom, id) {
    var host = document.getElementById(id), gd = plotOf(host), meta = mapMeta(gd);
    var clientside = window.dash_clientside;
    if (!host || !meta || meta.view !== "map" || !gd.layout) { return clientside.no_update; }
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

  // The zoomed region's figure, asked for at once and straight from the server (app/map_route.py):
  // through Dash's viewport store the request left only after dcc.Graph had replotted its echo of
  // the old figure (every WebGL point again) and Dash had dispatched the callback. plotly.js fires
  // plotly_relayout once per drag and already gathers a wheel's ticks; of several answers in
  // flight only the newest zoom's is drawn.
  var FIGURE_PATH = "/_map-figure";

  function askRegion(host, state, vp, quiet) {
    var seq = host._regionSeq = (host._regionSeq || 0) + 1;
    var params = Object.assign({ state: JSON.stringify(state) }, vp);
    var q = Object.keys(params).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]);
    }).join("&");
    var clientside = window.dash_clientside;
    getJson(FIGURE_PATH + "?" + q).then(function (figure) {
      if (seq !== host._regionSeq) { return; }  // a later zoom took over
      clientside.set_props("map-viewport", { data: vp });  // a new colour or filter keeps this region
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

  function bindMap(host, gd) {
    if (host._boundPlot === gd) { return; }
    host._boundPlot = gd;
    gd.addEventListener("mousedown", function (ev) { startPick(host, ev); }, true);
    gd.addEventListener("click", function (ev) { onMapClick(host, ev); });
    gd.addEventListener("mousemove", function (ev) { onMapHover(host, ev); });
    gd.addEventListener("mouseleave", function () { tooltipOf(host).hidden = true; hidePreview(host); });
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
      if (meta.view === "sphere") { bindSphere(host, gd); } else if (meta.view !== "scatter") { bindMap(host, gd); }  // scatter: plotly.js's picking
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
  // ================================================================ end of the map at any size

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    orientscope: {
      renderViewer: renderViewer, markSelected: markSelected, copyLink: copyLink, exportMap: exportMap,
      postUpload: postUpload, chosenFile: chosenFile, pollRecord: pollRecord, watchMap: watchMap,
      applyZoom: applyZoom, keepOneAxis: keepOneAxis
    }
  });
})();
