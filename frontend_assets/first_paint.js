/* The first paint at work before Dash and plotly.js have loaded: app/first_paint.py inlines this file
   into the page HTML, after Dash's root element, inside a placeholder that also holds the first paint's
   data as JSON (app/map_paint.py first_paint, the answer of GET /api/datasets/{id}/map/first-paint). It
   draws it as soon as it is parsed, about 1.5 s before the page's 6 MB of scripts have run: no plotly.js,
   no Dash. Drawn: the flat map or the density view's two maps (map_draw.js) or the 3D sphere (map_sphere.js),
   both inlined before this file and the same renderers as Dash's page (already interactive: zoom, pan, box select
   and lasso on the plane views, turning on the sphere), beside the molecule panel rendered from the layout's own Dash
   components.

   Clicks, hover, the ring and the density cells' words are map_component.js's, on the renderer's drawing (Dash's
   map runs the same code). Map: a click asks the server for the nearest shown point within 5 px of the image's
   pixel grid (GET .../map/nearest), rings it and names it, or opens the chooser where several molecules share
   its pixel; hovering asks what the point and its pixel hold (GET .../map/preview). Sphere: map_sphere.js turns
   it and picks its dots. Density view (the landing page): a click on either map asks as on the map (the
   control's picks its control molecules); hovering either map names its cell's density, and the other map's at
   the same place. The chosen molecule then shows in the static molecule panel: its id and info as the server
   gives them to Dash (GET .../map/panel/{id}) and its 3D viewer, drawn with 3Dmol.js by the same code as
   Dash's viewer (window.orientscopeMap.viewer).

   The choice is handed to Dash through the page URL (?molecule=), which Dash reads when it
   starts: the layout request carries the page's query (app/compat.py). When Dash renders its
   page over the first paint, its molecule viewer takes over the drawn 3Dmol viewer (no second
   WebGL context, no redraw from scratch), and a choice its layout does not carry goes to the
   panel and the page's "selected" store.

   When Dash's map box mounts, it takes the first paint's map drawing over (orientscope.js drawPlane: the
   drawing moves, window.orientscopeMap.firstPaintMap). Dash also loads this file as an asset: it then only shares
   window.orientscopeMap (the REST spelling and the viewer), which the interactive page's scripts use. */
(function (paint) {
  "use strict";
  // Where it runs. Inlined after the page's first-paint data: on the placeholder, its parent. Inlined in the head
  // (app/first_paint.py marks it data-first-paint-head), before the stylesheets: as soon as the parser has closed
  // the placeholder, since a mutation observer's callback does not wait for the head's stylesheets while an
  // inline script after them does. As Dash's asset: no data beside it, so it only shares window.orientscopeMap.
  var script = document.currentScript;
  if (script && script.hasAttribute("data-first-paint-head")) {
    var seen = new MutationObserver(function () {
      var page = document.querySelector(".first-paint-page");
      if (page && page.nextSibling) { seen.disconnect(); paint(page); }
    });
    seen.observe(document.documentElement, { childList: true, subtree: true });
  } else {
    paint(script && script.parentNode);
  }
})(function (root) {
  "use strict";
  // The index of the point (xs[i], ys[i]) nearest to (px, py) within `radius`, or -1. Among equally
  // near points the lowest keys[i] wins (3 x molecule index + axis - 1): the server's rule
  // (backend/science/nearest_point.py), which tests/science/test_nearest_point.py checks this against.
  function nearestPoint(xs, ys, keys, px, py, radius) {
    var best = -1, bestD2 = radius * radius;
    for (var i = 0; i < xs.length; i++) {
      var dx = xs[i] - px, dy = ys[i] - py, d2 = dx * dx + dy * dy;
      if (d2 < bestD2 || (d2 === bestD2 && (best < 0 || keys[i] < keys[best]))) { best = i; bestD2 = d2; }
    }
    return best;
  }

  // ---------------------------------------------------------------- 3D viewer specs (backend/figures/viewer.py)
  // Rendered with 3Dmol.js in one WebGL context per element (a viewer grid, rotation linked), by the
  // first paint's panel and by Dash's clientside callbacks alike (orientscope.js renderViewer).
  var VIEW_HEIGHT = 280;
  var CAPTION_PX = 20;  // the height of a cell's caption (style.css .viewer-caption)
  var ZOOM_MARGIN = 0.7;

  function vec(p) { return { x: p[0], y: p[1], z: p[2] }; }

  // Multisampling costs a software renderer (SwiftShader, llvmpipe: headless or GPU-less
  // machines) about 0.8 s per redraw of a small molecule, and a GPU nothing.
  var softwareGL = null;
  function isSoftwareGL() {
    if (softwareGL !== null) { return softwareGL; }
    softwareGL = false;
    try {
      var gl = document.createElement("canvas").getContext("webgl");
      if (gl) {
        var info = gl.getExtension("WEBGL_debug_renderer_info");
        var name = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
        softwareGL = /swiftshader|llvmpipe|softpipe|software/i.test(name);
        var lose = gl.getExtension("WEBGL_lose_context");
        if (lose) { lose.loseContext(); }
      }
    } catch (e) { softwareGL = false; }
    return softwareGL;
  }

  function ensureGrid(el, spec) {
    var key = spec.rows + "x" + spec.cols + ":" + spec.linked;
    if (el._grid && el._gridKey === key) {
      el._grid.forEach(function (row) { row.forEach(function (v) { v.clear(); }); });
      return el._grid;
    }
    el.innerHTML = "";
    var holder = document.createElement("div");
    holder.className = "viewer-canvas";
    holder.style.position = "relative";
    holder.style.height = spec.rows * VIEW_HEIGHT + "px";
    // Each caption sits in its own cell (an overlay grid of the same rows and columns).
    var captions = document.createElement("div");
    captions.className = "viewer-captions";
    captions.style.gridTemplateColumns = "repeat(" + spec.cols + ", 1fr)";
    captions.style.gridTemplateRows = "repeat(" + spec.rows + ", " + VIEW_HEIGHT + "px)";
    el.appendChild(holder);
    el._grid = $3Dmol.createViewerGrid(holder, { rows: spec.rows, cols: spec.cols, control_all: !!spec.linked },
                                       // orthographic: a fitted view (fitView) holds for near and far atoms alike
                                       { backgroundColor: "white", antialias: !isSoftwareGL(), orthographic: true });
    holder.appendChild(captions);  // after the grid's canvases, so it is drawn on top of them
    el._gridKey = key;
    el._captions = captions;
    return el._grid;
  }

  // `cell`: the scene's {width, height} in px; the view is then fitted to it (fitView), else zoomed out
  // from the atoms by ZOOM_MARGIN.
  function drawScene(v, scene, cell) {
    var model = v.addModel(scene.xyz, "xyz");
    v.setStyle({}, { stick: { radius: 0.14, colorscheme: "Jmol" }, sphere: { scale: 0.22, colorscheme: "Jmol" } });
    (scene.arrows || []).forEach(function (a) {
      v.addArrow({ start: vec(a.start), end: vec(a.end), radius: 0.05, color: a.color });
      // centred just past the tip, on a light backing
      v.addLabel(a.label, { position: vec(a.label_at || a.end), fontSize: 13, fontColor: a.color,
                            backgroundColor: "white", backgroundOpacity: 0.75, inFront: true,
                            alignment: "center" });
    });
    v.zoomTo();
    if (cell) { fitView(v, model.selectedAtoms({}), scene.arrows || [], cell); } else { v.zoom(ZOOM_MARGIN); }
    v.render();
    return model.selectedAtoms({}).length;
  }

  // The camera looks along (-1, -1, -1): x points right and down, y up, z left and down, each drawn at 0.82
  // of its length and none towards the viewer. A label just past its arrow's tip (backend/figures/viewer.py) then lies
  // beyond every atom along its own direction on screen: the view shortens the atoms' offsets as much as
  // the arrow.
  var ISOMETRIC = [0.279848, -0.364705, -0.115917, 0.880476];  // that rotation as a quaternion (x, y, z, w)
  var SCREEN_X = [0.707107, 0, -0.707107];  // the screen's x in model coordinates: a scale probe
  var ATOM_PAD = 0.45;  // Å around an atom's centre: its drawn sphere
  var LABEL_PAD_PX = 14;  // px around a label's point: its text
  var EDGE_PX = 4;
  var SLAB_MARGIN = 0.5;  // Å beyond the farthest item, front and back

  // Fits the view to the molecule whichever way it is turned: the rotation centre (zoomTo's, the atoms'
  // centre) sits at the cell's centre, and the sphere about it that holds every atom (with its drawn sphere)
  // and every axis label (with its text) fits the cell; the slab (3Dmol's near and far clipping planes) holds
  // that sphere too. A fit to the first view's outline cropped the molecule and its axes once it was turned.
  function fitView(v, atoms, arrows, cell) {
    var view = v.getView();
    v.setView(view.slice(0, 4).concat(ISOMETRIC));
    var c = [-view[0], -view[1], -view[2]];
    var items = atoms.map(function (a) { return { p: [a.x, a.y, a.z], pad: ATOM_PAD, px: 0 }; })
      .concat(arrows.map(function (a) { return { p: a.label_at || a.end, pad: 0, px: LABEL_PAD_PX }; }));
    // px per Å now, at the depth of the view's centre
    var o = v.modelToScreen({ x: c[0], y: c[1], z: c[2] });
    var e = v.modelToScreen({ x: c[0] + SCREEN_X[0], y: c[1] + SCREEN_X[1], z: c[2] + SCREEN_X[2] });
    var scale = Math.hypot(e.x - o.x, e.y - o.y);
    // the largest px per Å at which each item, turned any way about the centre, stays inside the cell
    var half = Math.min(cell.width, cell.height) / 2 - EDGE_PX, fit = Infinity, reach = 0;
    items.forEach(function (it) {
      var r = Math.hypot(it.p[0] - c[0], it.p[1] - c[1], it.p[2] - c[2]) + it.pad;
      reach = Math.max(reach, r);
      if (r > 0) { fit = Math.min(fit, (half - it.px) / r); }
    });
    if (!isFinite(fit) || !(scale > 0)) { return; }
    v.zoom(fit / scale);
    v.setSlab(-reach - SLAB_MARGIN, reach + SLAB_MARGIN);
  }

  // 3Dmol.js (540 kB) is not in the page (app/dashboard.py LAZY_ASSETS): the first screen does not
  // show a molecule, so a new visitor's browser parses it only when one is shown, or once the map is
  // drawn and the page is idle (orientscope.js warmViewer).
  var threeDmolLoading = null;
  function load3Dmol() {
    if (typeof $3Dmol !== "undefined") { return Promise.resolve(); }
    if (!threeDmolLoading) {
      threeDmolLoading = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = "/assets/3Dmol-min.js";
        s.onload = function () { resolve(); };
        s.onerror = function () { threeDmolLoading = null; reject(new Error("3Dmol.js did not load")); };
        document.head.appendChild(s);
      });
    }
    return threeDmolLoading;
  }

  // Draws a viewer spec into `el` (3Dmol.js loaded): its scenes, captions, and data-molecule (the
  // molecule shown) and data-atoms (atoms drawn per scene) for tests. Returns the spec's molecule.
  function drawSpec(el, spec) {
    // Dash's copy of a spec the viewer already shows (a map click or the first paint drew it first, or
    // a control changed and the molecule callback answered the same molecule again): drawing it again
    // would cost a redraw and reset the user's rotation.
    var key = JSON.stringify(spec);
    if (el._grid && el._shownKey === key) { return spec.molecule || ""; }
    var grid = ensureGrid(el, spec);
    el._shownKey = key;
    el._captions.innerHTML = "";
    var atoms = [];
    grid.forEach(function (row, r) {
      row.forEach(function (v, c) {
        var scene = spec.scenes[r * spec.cols + c];
        var cap = document.createElement("div");
        cap.className = "viewer-caption";
        cap.dataset.cell = r + "," + c;
        cap.textContent = scene ? scene.title : "";
        if (scene && scene.molecule) { cap.dataset.molecule = scene.molecule; }  // group_grid.js opens it
        el._captions.appendChild(cap);
        if (!scene) { v.render(); return; }
        // the cell less the caption's strip at its foot (kept free at the top too: the view stays centred)
        var cell = { width: el._captions.clientWidth / spec.cols, height: VIEW_HEIGHT - 2 * CAPTION_PX };
        atoms.push(drawScene(v, scene, cell));
      });
    });
    el.dataset.molecule = spec.molecule || "";
    el.dataset.atoms = atoms.join(",");
    return spec.molecule || "";
  }

  // The first paint's drawn molecule viewer (handOverFrom), until Dash's molecule viewer, an element of
  // the same id, takes it over (takeOver): the WebGL context, its compiled shaders and its picture
  // move along, so the molecule stays on screen, and Dash's next draw of it reuses them.
  var handedOver = null;
  function handOverFrom(el) { handedOver = el; }

  function takeOver(el) {
    var from = handedOver;
    if (!el || !from || from === el || from.id !== el.id || !from._grid || el._grid ||
        document.getElementById(el.id) !== el) { return false; }
    handedOver = null;
    var holder = from.querySelector(".viewer-canvas"), width = holder.clientWidth;
    el.appendChild(holder);
    ["_grid", "_gridKey", "_captions", "_shownKey"].forEach(function (k) { el[k] = from[k]; from[k] = undefined; });
    el.dataset.molecule = from.dataset.molecule || "";
    el.dataset.atoms = from.dataset.atoms || "";
    el._fromFirstPaint = true;  // shown until Dash has a viewer spec of its own (orientscope.js renderViewer)
    if (holder.clientWidth !== width) {
      el._grid.forEach(function (row) { row.forEach(function (v) { v.resize(); v.render(); }); });
    }
    return true;
  }

  // ---------------------------------------------------------------- the map's REST resource
  // One spelling of its URLs (api/routes/orientation_map.py) for every script that asks it: the first paint,
  // the interactive map (orientscope.js), the hover preview (hover_preview.js) and the pins (pins.js).
  function restUrl(dataset, path, params) {
    var q = Object.keys(params || {}).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]);
    }).join("&");
    return "/api/datasets/" + encodeURIComponent(dataset) + "/" + path + (q ? "?" + q : "");
  }

  function panelUrl(dataset, id) { return restUrl(dataset, "map/panel/" + encodeURIComponent(id)); }

  // An answer's JSON, or null for an error status; rejects when the server cannot be reached.
  function fetchJson(url) { return fetch(url).then(function (r) { return r.ok ? r.json() : null; }); }

  // One copy per page: the inline first paint's and the asset's share the 3Dmol.js loader and the viewers
  // (map_component.js, which runs first, has put its component there already).
  if (!(window.orientscopeMap && window.orientscopeMap.rest)) {
    window.orientscopeMap = Object.assign(window.orientscopeMap || {}, {
      rest: { url: restUrl, panelUrl: panelUrl, getJson: fetchJson },
      nearestPoint: nearestPoint,
      viewer: { load: load3Dmol, draw: drawSpec, ensureGrid: ensureGrid, drawScene: drawScene,
                handOverFrom: handOverFrom, takeOver: takeOver }
    });
  }
  var dataEl = root && root.querySelector(":scope > script.first-paint-data");
  if (!dataEl) { return; }  // loaded as an asset: nothing to paint
  // ---------------------------------------------------------------- drawing the first paint's data
  // map_draw.js's element builders (inlined before this script)
  var el = window.orientscopeMap.draw.el, svgEl = window.orientscopeMap.draw.svgEl;

  // Dash html components as JSON ({type, namespace, props}) as DOM nodes: the molecule panel and its info, the
  // layout's own components, so the first paint's panel and Dash's are the same markup.
  var SKIPPED_PROPS = { children: 1, n_clicks: 1, n_clicks_timestamp: 1, disable_n_clicks: 1, key: 1, loading_state: 1 };
  function renderComponents(node) {
    if (node === null || node === undefined || node === false) { return []; }
    if (Array.isArray(node)) { return node.reduce(function (out, n) { return out.concat(renderComponents(n)); }, []); }
    if (typeof node !== "object") { return [document.createTextNode(String(node))]; }
    if (node.namespace !== "dash_html_components") { return []; }  // a dcc component needs its React code
    var props = node.props || {}, e = document.createElement(node.type.toLowerCase());
    Object.keys(props).forEach(function (k) {
      var v = props[k];
      if (SKIPPED_PROPS[k] || v === null || v === undefined || v === false) { return; }
      if (k === "className") { e.className = v; } else if (k === "style") { Object.assign(e.style, v); }
      else if (k === "htmlFor") { e.htmlFor = v; } else { e.setAttribute(k, v === true ? "" : String(v)); }
    });
    renderComponents(props.children).forEach(function (c) { e.appendChild(c); });
    return [e];
  }

  function title(text) {
    var p = el("p", { style: "font:14px sans-serif;margin:4px 0" });
    p.textContent = text || "";
    return p;
  }

  // The test hook, set once the image's pixels are on screen; the performance mark lets a benchmark read when that
  // was: when the browser says it presented the image (Element Timing), or, in a browser without it (or with no
  // entry a second after), once the image is decoded and two animation frames have begun (as orientscope.js does
  // for the plot). Element Timing alone where it exists: the second frame can begin before the first one's pixels
  // are presented (its raster waits behind a long task), and the mark came up to 55 ms before the page's first
  // contentful paint in cold landings on the shared 2-core machine.
  function setHook(mapEl, hook, image) {
    var set = false, framed = 0, timed = image && window.PerformanceElementTiming;
    function done(at) {
      if (set || !mapEl.isConnected) { return; }
      set = true;
      mapEl.setAttribute("data-mode", hook.mode);
      mapEl.setAttribute("data-drawn", hook.drawn);
      if (hook.token) { mapEl.setAttribute("data-token", hook.token); mapEl.setAttribute("data-zoom", ""); }
      performance.mark("orientscope:first-paint", { startTime: at });
    }
    function presented(entries) {  // when the browser presented the image (0: not among these entries)
      var at = 0;
      entries.forEach(function (e) { if (e.element === image && e.renderTime > 0) { at = e.renderTime; } });
      return at;
    }
    if (timed) {  // the page's <img> is named for Element Timing (app/first_paint.py placeholder_html)
      var shown = new PerformanceObserver(function (list) {
        var at = presented(list.getEntries());
        if (at) { shown.disconnect(); done(at); }
      });
      shown.observe({ type: "element", buffered: true });
    }
    var loaded = !image || !image.decode || (image.complete && image.naturalWidth > 0);  // the page's own image
    (loaded ? Promise.resolve() : image.decode()).catch(function () {}).then(function () {
      requestAnimationFrame(function () {
        requestAnimationFrame(function () {
          framed = performance.now();
          if (timed) {  // its entry may follow (its task can wait behind a bundle too); if none comes, the frames
            setTimeout(function () { done(presented(shown.takeRecords()) || framed); }, 1000);
          } else {
            done(framed);
          }
        });
      });
    });
  }

  function mapHost(paint, maxWidth) {
    var host = el("div", { id: "orientation-map", "class": "first-paint", "data-first-paint": "1",
                           "data-map": JSON.stringify(paint.settings), style: "max-width:" + maxWidth + ";position:relative" });
    return host;
  }

  // Every view (map, density, sphere): map_draw.js's renderers (inlined before this script, with map_sphere.js), the
  // same code as Dash's map. Its first drawing sets the first paint's hook (setHook: the image's presentation time);
  // later ones (a zoom before Dash has loaded) the renderer's own.
  var MAX_WIDTH = { map: "900px", density: "none", sphere: "460px" };
  var mapHandle = null;
  function drawMap(paint, parent) {
    var host = mapHost(paint, MAX_WIDTH[paint.view]), first = true;
    parent.appendChild(host);  // on the page before it is drawn: the points' canvas takes the stage's size
    mapHandle = window.orientscopeMap.draw(host, paint, {
      say: function (text) { say(text); },
      choose: function (id, hit, answer, ev) { chosen(ev, id, answer); },
      // a box or lasso: into the URL, which Dash reads when it starts, and held for Dash's map to take over with the
      // drawing (orientscope.js drawPlane), in case Dash asked for its layout before
      onSelect: function (polygon, kind) {
        var text = window.orientscopeMap.draw.selectionText(polygon, kind);
        window.orientscopeMap.firstPaintSelection = text;
        setParam("sel", text);
      },
      drawn: function (handle, p, image) {
        if (first) { first = false; setHook(host, p.hook, image); return; }
        window.orientscopeMap.draw.setHook(host, p, image, window.orientscopeMap.draw.zoomText(handle.region()));
      }
    });
    window.orientscopeMap.firstPaintMap = mapHandle;  // Dash's map box takes it over (orientscope.js drawPlane)
    return { maps: [host], host: host };
  }

  // The page's structure (app/dashboard.py build_layout): the map beside the molecule panel, so the panel has
  // the width it will have once Dash has rendered the page.
  var paintData = JSON.parse(dataEl.textContent);
  var pagePanel = paintData.panel;
  var mapBox = el("div", { "class": "map" });
  var explore = el("div", { "class": "explore", "data-first-paint": "1" }, [mapBox].concat(renderComponents(pagePanel.layout)));
  root.appendChild(el("section", { "class": "panel" }, [explore]));
  var page = root;
  root = explore;
  var drawn = drawMap(paintData, mapBox);

  var viewer = window.orientscopeMap.viewer;
  var component = window.orientscopeMap.component;  // map_component.js, inlined before this script
  var host = drawn.host;
  var cfg = paintData.settings;
  function say(text) {
    var hint = host.querySelector(".map-hint");
    if (hint) { hint.textContent = text || ""; }
  }

  function getJson(url) { return fetchJson(url).catch(function () { return null; }); }


  // ---------------------------------------------------------------- the molecule panel
  // Dash's panel, from the layout's components (the first paint's data), filled here until Dash's takes over.
  var panel = root.querySelector("#molecule-panel");
  var staticViewer = root.querySelector("#molecule-viewer");
  var pick = null;  // the molecule chosen here: {id, answer (the panel route's), spec}

  // After the next frame: the panel's id and info are on screen before 3Dmol.js (540 kB) is parsed and
  // the viewer drawn (about 0.5 s of software WebGL for the first molecule).
  function drawViewer(spec) {
    requestAnimationFrame(function () {
      setTimeout(function () {
        viewer.load().then(function () {
          if (!root.isConnected || !pick || pick.spec !== spec) { return; }  // Dash took over, or a later pick
          viewer.draw(staticViewer, spec);
          viewer.handOverFrom(staticViewer);
          requestAnimationFrame(function () { performance.mark("orientscope:first-paint-viewer"); });
        }, function () { staticViewer.textContent = "3Dmol.js did not load"; });
      }, 0);
    });
  }

  function showPanel(answer) {
    panel.querySelector("#molecule-id").textContent = answer.molecule_id;
    var info = panel.querySelector("#molecule-info");
    info.replaceChildren.apply(info, renderComponents(answer.info));
    requestAnimationFrame(function () { performance.mark("orientscope:first-paint-panel"); });
    if (answer.viewer) { drawViewer(pick.spec = answer.viewer); }
  }

  // Once Dash's page is rendered, its viewer takes this one's WebGL viewer over, and its panel shows
  // the chosen molecule: its layout carries one chosen before the layout was asked for (through the
  // URL's Referer); one chosen later goes to its panel at once (the route's answer is Dash's own
  // components) and to the "selected" store, which opens it in the rest of the page (map ring,
  // neighbours).
  function toDash(tries) {
    var shown = document.getElementById("molecule-id"), clientside = window.dash_clientside;
    if (!shown || root.contains(shown) || !(clientside && clientside.set_props)) {
      if (tries > 0) { setTimeout(function () { toDash(tries - 1); }, 50); }
      return;
    }
    viewer.takeOver(document.getElementById("molecule-viewer"));
    if (!pick || shown.textContent === pick.id) { return; }
    if (pick.answer) {
      clientside.set_props("molecule-id", { children: pick.answer.molecule_id });
      clientside.set_props("molecule-info", { children: pick.answer.info });
    }
    clientside.set_props("selected", { data: pick.id });
  }

  // Dash's renderer first replaces the page's content by its "Loading..." placeholder, and its page
  // comes a request later: until then, the first paint stays on screen just after Dash's root
  // (style.css hides the placeholder meanwhile), and it leaves in the frame Dash's page arrives in.
  var entry = document.getElementById("react-entry-point");
  if (entry) {
    new MutationObserver(function (_, watch) {
      var dashPanel = entry.querySelector("#molecule-panel");
      if (dashPanel && !page.contains(dashPanel)) {
        watch.disconnect();
        page.remove();
        toDash(600);
      } else if (!page.isConnected) {
        entry.after(page);
      }
    }).observe(document.body, { childList: true, subtree: true });
  }

  // Hand the chosen molecule to Dash through the URL (see the top of this file).
  function setParam(name, value) {
    var url = new URL(window.location.href);
    if (value === null) { url.searchParams.delete(name); } else { url.searchParams.set(name, value); }
    // a molecule or selection with no view opens the point map (app/state.py parse_query): keep the view it was
    // made in
    if (!url.searchParams.has("view")) { url.searchParams.set("view", cfg.view); }
    window.history.replaceState(window.history.state, "", url.pathname + url.search + url.hash);
  }
  function toUrl(id) { setParam("molecule", id); }

  // A chosen molecule (the renderer has ringed it): named at once, then shown in the panel (`answer`: the panel
  // route's, asked for with the pick; null: asked now).
  function chosen(ev, id, answer) {
    say("Molecule " + id);
    toUrl(id);
    requestAnimationFrame(function () {  // the frame with the ring: how long the click took to answer
      performance.measure("orientscope:first-paint-click", { start: ev.timeStamp, end: performance.now() });
    });
    pick = { id: id, answer: null, spec: null };
    if (!root.isConnected) { toDash(600); return; }  // Dash's page is up: its panel shows it
    (answer ? Promise.resolve(answer) : getJson(panelUrl(cfg.dataset, id))).then(function (got) {
      if (!got || !pick || pick.id !== id) { return; }
      pick.answer = got;
      if (root.isConnected) { showPanel(got); } else { toDash(600); }
    });
  }

  // A page opened on a molecule: the server filled the panel in; draw its viewer.
  if (pagePanel.viewer) {
    var opened = pagePanel.viewer;
    pick = { id: opened.molecule, answer: null, spec: opened };
    drawViewer(opened);
  }
});
