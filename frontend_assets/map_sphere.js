/* The 3D sphere view's renderer, its one renderer: map_draw.js's renderer for paints of view "sphere", on the page's
   first paint (app/first_paint.py inlines this file after map_draw.js) and in Dash's map box (loaded as an asset
   after map_draw.js: assets load in name order; orientscope.js drawPlane hands it the paint store and takes the first
   paint's drawing over, handle.moveTo). It draws from the paint of
   GET /api/datasets/{id}/map/first-paint?view=sphere (app/sphere_paint.py sphere_paint): the points as unit
   vectors, their colours (categorical, continuous, a SMARTS highlight or none), ids and tie-break keys, the
   reference orientation's axes, the selected molecule's ring and the title.

   A <canvas>, orthographic, the unit sphere seen from a turntable camera with z up that starts where plotly's 3D
   scene does (eye (1.25, 1.25, 1.25); app/sphere_paint.py SPHERE_RIGHT, SPHERE_UP, SPHERE_TOWARDS). Each frame draws
   the sphere's outline, equator and meridians, then the points back to front (a counting sort on depth), those
   behind the sphere faded, the matches of a SMARTS search over the others, then the reference axes; the ring is
   map_component.js's SVG overlay, placed again on every frame so it turns with the sphere. Drawn on
   requestAnimationFrame only. Drag turns it, the wheel zooms, a double click returns to the start.

   A click or hover picks the nearest dot within 5 px on the near hemisphere (else on the far one), among equally
   near dots the lowest key (the server's rule, window.orientscopeMap.nearestPoint): a click rings that molecule's
   dots and calls hooks.choose(id, hit, null, ev, current) (map_draw.js's signature; no panel is asked for, and
   current() is false once a later click took over); a hover shows map_component.js's tooltip and, after a rest,
   hover_preview.js's card.

   render(host, paint, hooks) -> handle {host, paint(), update(paint), moveTo(host, hooks), destroy(),
   ring(vectors), ringMolecule(id), camera(), reset(), region() (null), zoom(), showSelection() (no-ops: the plane
   views' handle has them)}; hooks: {choose, say, drawn(handle, paint, null) once a paint is on screen (default: the
   test hook data-mode, data-drawn, data-token, map_draw.js setHook)}. */
(function () {
  "use strict";
  var shared = window.orientscopeMap = window.orientscopeMap || {};
  if (shared.sphere) { return; }  // inlined in the first paint and loaded again by Dash

  // ---------------------------------------------------------------- the camera (pure: tests/app/test_map_sphere.py)
  // Turntable: the viewer sits at `azimuth` about z from x and `elevation` above the xy plane; z stays up.
  var START = { azimuth: Math.PI / 4, elevation: Math.asin(1 / Math.sqrt(3)), zoom: 1 };
  var RANGE = 1.1;  // the 3D scene's axis ranges (backend/figures/plots.py sphere_figure): the unit sphere's margin
  var MAX_ELEVATION = Math.PI / 2 - 1e-3;
  var ZOOM_LIMITS = [0.5, 10];

  // The camera's screen right, screen up and towards-the-viewer directions, each [x, y, z].
  function basis(cam) {
    var ca = Math.cos(cam.azimuth), sa = Math.sin(cam.azimuth), ce = Math.cos(cam.elevation), se = Math.sin(cam.elevation);
    return { right: [-sa, ca, 0], up: [-se * ca, -se * sa, ce], towards: [ce * ca, ce * sa, se] };
  }

  // The sphere's radius in px on a `width` x `height` drawing.
  function radiusPx(cam, width, height) { return Math.min(width, height) / 2 / RANGE * cam.zoom; }

  // Screen positions (px from the drawing's top left, y down) and depth (towards the viewer, -1..1) of the flat
  // unit vectors `v` (x0, y0, z0, x1, ...).
  function project(cam, v, width, height, out) {
    var b = basis(cam), r = radiusPx(cam, width, height), n = v.length / 3, cx = width / 2, cy = height / 2;
    out = out && out.x.length === n ? out : { x: new Float64Array(n), y: new Float64Array(n), depth: new Float64Array(n) };
    var R = b.right, U = b.up, T = b.towards;
    for (var i = 0, j = 0; i < n; i++, j += 3) {
      var x = v[j], y = v[j + 1], z = v[j + 2];
      out.x[i] = cx + r * (R[0] * x + R[1] * y + R[2] * z);
      out.y[i] = cy - r * (U[0] * x + U[1] * y + U[2] * z);
      out.depth[i] = T[0] * x + T[1] * y + T[2] * z;
    }
    return out;
  }

  // The camera after a drag of (dx, dy) px on a sphere of radius `r` px: a turn about z of dx / r and a tip of
  // dy / r, so the front follows the cursor (a drag to the right turns it right, a drag down tips it down;
  // sideways shortened by the cosine of the elevation the turn about z is seen from).
  function dragged(cam, dx, dy, r) {
    var el = Math.max(-MAX_ELEVATION, Math.min(MAX_ELEVATION, cam.elevation + dy / r));
    return { azimuth: cam.azimuth - dx / r, elevation: el, zoom: cam.zoom };
  }

  // ---------------------------------------------------------------- colours
  var LEVELS = 64;  // a continuous colour is drawn as one of this many steps of its scale
  var PICK_PX = 5;  // as the server's nearest point (backend/services/map_raster.py)
  var CLICK_SLOP_PX = 4;  // a release farther from its press ends a turn, not a click
  var DEPTH_BINS = 128;
  var GRID = "#888888";

  function rgb(hex) {
    var h = hex.replace("#", "");
    if (h.length === 3) { h = h[0] + h[0] + h[1] + h[1] + h[2] + h[2]; }
    return [parseInt(h.slice(0, 2), 16), parseInt(h.slice(2, 4), 16), parseInt(h.slice(4, 6), 16)];
  }

  // The colour at fraction t (0-1) of evenly spaced stops, interpolated in RGB as plotly.js does.
  function scaleColor(stops, t) {
    var at = Math.max(0, Math.min(1, t)) * (stops.length - 1), i = Math.min(Math.floor(at), stops.length - 2), f = at - i;
    var a = rgb(stops[i]), b = rgb(stops[i + 1]);
    return "rgb(" + [0, 1, 2].map(function (k) { return Math.round(a[k] + (b[k] - a[k]) * f); }).join(",") + ")";
  }

  // (the sprite colours, each point's sprite index): the palette's, or LEVELS steps of the scale and the grey
  // of no value last.
  function colorsOf(c, n) {
    var of = new Uint16Array(n), i;
    if (c.kind !== "continuous") {
      for (i = 0; i < n; i++) { of[i] = c.code[i] || 0; }
      return { colors: c.palette.slice(), of: of };
    }
    var colors = [];
    for (i = 0; i < LEVELS; i++) { colors.push(scaleColor(c.scale, i / (LEVELS - 1))); }
    colors.push(c.missing);
    for (i = 0; i < n; i++) {
      var t = c.values[i];
      of[i] = t === null || t === undefined || t !== t ? LEVELS : Math.round(t * (LEVELS - 1));
    }
    return { colors: colors, of: of };
  }

  // One small tile per colour, a filled dot of `size` px (outlined as the plot's markers are), drawn once by the
  // canvas (antialiased) and kept as its RGBA pixels.
  function sprites(colors, size, outline, dpr) {
    var px = Math.ceil((size + 2) * dpr);
    return colors.map(function (color) {
      var s = document.createElement("canvas");
      s.width = s.height = px;
      var g = s.getContext("2d");
      g.beginPath();
      g.arc(px / 2, px / 2, size / 2 * dpr, 0, 2 * Math.PI);
      g.fillStyle = color;
      g.fill();
      if (outline) { g.lineWidth = dpr; g.strokeStyle = outline; g.stroke(); }
      return { w: px, h: px, data: g.getImageData(0, 0, px, px).data };
    });
  }

  // Tile `t` composited over the RGBA pixels `px` (a W x H drawing) at (x0, y0) with opacity `alpha` (source-over):
  // one drawImage per dot cost 130 ms a frame for 30,000 dots on a software canvas; this loop a tenth of it.
  function splat(px, W, H, t, x0, y0, alpha) {
    var d = t.data, a0 = alpha / 255;
    for (var ty = 0; ty < t.h; ty++) {
      var y = y0 + ty;
      if (y < 0 || y >= H) { continue; }
      for (var tx = 0, s = ty * t.w * 4; tx < t.w; tx++, s += 4) {
        var x = x0 + tx, sa = d[s + 3] * a0;
        if (sa <= 0 || x < 0 || x >= W) { continue; }
        var o = (y * W + x) * 4, k = px[o + 3] / 255 * (1 - sa), oa = sa + k;
        px[o] = (d[s] * sa + px[o] * k) / oa;
        px[o + 1] = (d[s + 1] * sa + px[o + 1] * k) / oa;
        px[o + 2] = (d[s + 2] * sa + px[o + 2] * k) / oa;
        px[o + 3] = oa * 255;
      }
    }
  }

  // ---------------------------------------------------------------- the legend and title
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function legendOf(c) {
    var box = el("div", "sphere-legend");
    box.style.cssText = "font:12px sans-serif;display:flex;flex-wrap:wrap;gap:4px 12px;justify-content:center;margin:4px 0";
    if (c.kind === "continuous") {
      var bar = el("div", "sphere-colorbar");
      bar.style.cssText = "position:relative;width:70%;margin:0 auto 16px";
      var strip = el("div");
      strip.style.cssText = "height:10px;background:linear-gradient(to right," + c.scale.join(",") + ")";
      bar.append(el("div", "sphere-colorbar-title", c.title), strip);
      c.ticks.forEach(function (tick) {
        var label = el("span", "sphere-colorbar-tick", tick[1]);
        label.style.cssText = "position:absolute;top:100%;transform:translateX(-50%);left:" + (100 * tick[0]) + "%";
        bar.appendChild(label);
      });
      box.appendChild(bar);
      return box;
    }
    (c.labels || []).forEach(function (label, k) {
      var item = el("span", "sphere-legend-item"), swatch = el("span");
      swatch.style.cssText = "display:inline-block;width:9px;height:9px;border-radius:50%;margin-right:4px;background:" + c.palette[k];
      item.append(swatch, document.createTextNode(label));
      box.appendChild(item);
    });
    return box;
  }

  // ---------------------------------------------------------------- the renderer
  function render(host, paint, hooks) {
    hooks = hooks || {};
    var component = shared.component;  // map_component.js: the tooltip, the card and the ring
    var cam = Object.assign({}, START);
    var s, colors, tiles, spriteOf, proj = null, width = 0, height = 0, dpr = 1, ringed = [], queued = 0;
    var order = null, lastDraw = 0;

    var titleEl = el("p", "sphere-title");
    titleEl.style.cssText = "font:14px sans-serif;margin:4px 0";
    var canvas = el("canvas", "sphere-canvas");
    canvas.style.cssText = "display:block;width:100%;aspect-ratio:1;cursor:grab;touch-action:none";
    var legend = el("div");
    // one box, as wide as the first paint's sphere on any page (Dash's map box is wider): the drawing moves in it
    var box = el("div", "sphere-drawing");
    box.style.cssText = "max-width:460px";
    box.append(titleEl, canvas, legend);
    host.append(box);
    var ctx = canvas.getContext("2d");
    var notify = false, clicks = 0;  // notify: tell hooks.drawn after the next frame; clicks: the latest click's number

    function setPaint(p) {
      paint = p;
      s = p.sphere;
      var c = colorsOf(s.color, s.ids.length);
      colors = c.colors;
      spriteOf = c.of;
      tiles = null;  // drawn at the next frame's pixel ratio
      titleEl.textContent = p.title || "";
      canvas.setAttribute("aria-label", p.title || "");
      canvas.setAttribute("role", "img");
      legend.replaceChildren(legendOf(s.color));
      ringed = s.ring || [];
    }

    function schedule() {
      if (!queued) { queued = requestAnimationFrame(draw); }
    }

    function sized() {
      var w = canvas.clientWidth || 460, h = canvas.clientHeight || w, ratio = window.devicePixelRatio || 1;
      if (w !== width || h !== height || ratio !== dpr || !tiles) {
        width = w; height = h; dpr = ratio;
        canvas.width = Math.round(w * dpr);
        canvas.height = Math.round(h * dpr);
        var size = s.size, match = s.color.kind === "highlight";
        tiles = { base: sprites(colors, size, s.outline, dpr), match: match ? sprites(colors, size + 1.5, s.outline, dpr) : null };
      }
    }

    // Great circles (the equator, and meridians every 30°) as 3D polylines: under the dots, their far halves fainter.
    function circles() {
      var lines = [], k, t, pts;
      for (k = 0; k < 6; k++) {
        var lon = k * Math.PI / 6;
        pts = [];
        for (t = 0; t <= 72; t++) {
          var a = t * Math.PI / 36;
          pts.push([Math.cos(lon) * Math.sin(a), Math.sin(lon) * Math.sin(a), Math.cos(a)]);
        }
        lines.push(pts);
      }
      pts = [];
      for (t = 0; t <= 72; t++) { pts.push([Math.cos(t * Math.PI / 36), Math.sin(t * Math.PI / 36), 0]); }
      lines.push(pts);
      return lines;
    }
    var GREAT_CIRCLES = circles();

    function drawGrid(b, r) {
      var cx = width / 2, cy = height / 2;
      ctx.beginPath();
      ctx.arc(cx, cy, r, 0, 2 * Math.PI);
      ctx.fillStyle = "#f4f4f4";
      ctx.fill();
      ctx.lineWidth = 1;
      ctx.strokeStyle = "#bbbbbb";
      ctx.stroke();
      [false, true].forEach(function (front) {
        ctx.beginPath();
        GREAT_CIRCLES.forEach(function (pts) {
          for (var i = 1; i < pts.length; i++) {
            var p = pts[i - 1], q = pts[i];
            var d = b.towards[0] * (p[0] + q[0]) + b.towards[1] * (p[1] + q[1]) + b.towards[2] * (p[2] + q[2]);
            if ((d >= 0) !== front) { continue; }
            ctx.moveTo(cx + r * (b.right[0] * p[0] + b.right[1] * p[1] + b.right[2] * p[2]),
                       cy - r * (b.up[0] * p[0] + b.up[1] * p[1] + b.up[2] * p[2]));
            ctx.lineTo(cx + r * (b.right[0] * q[0] + b.right[1] * q[1] + b.right[2] * q[2]),
                       cy - r * (b.up[0] * q[0] + b.up[1] * q[1] + b.up[2] * q[2]));
          }
        });
        ctx.strokeStyle = GRID;
        ctx.globalAlpha = front ? 0.45 : 0.15;
        ctx.stroke();
        ctx.globalAlpha = 1;
      });
    }

    // The points' drawing order: back to front (DEPTH_BINS steps of depth, the server's order within a step), a
    // SMARTS search's matches after every other point.
    function depthOrder(depth, matched) {
      var n = depth.length, bins = matched ? 2 * DEPTH_BINS : DEPTH_BINS, count = new Uint32Array(bins + 1);
      var bin = new Uint16Array(n), i;
      for (i = 0; i < n; i++) {
        var k = Math.min(DEPTH_BINS - 1, Math.max(0, Math.floor((depth[i] + 1) / 2 * DEPTH_BINS)));
        bin[i] = matched && matched[i] ? k + DEPTH_BINS : k;
        count[bin[i] + 1]++;
      }
      for (i = 0; i < bins; i++) { count[i + 1] += count[i]; }
      order = order && order.length === n ? order : new Uint32Array(n);
      for (i = 0; i < n; i++) { order[count[bin[i]]++] = i; }
      return order;
    }

    function draw() {
      queued = 0;
      if (!host.isConnected) { return; }
      var t0 = performance.now();
      sized();
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, width, height);
      var b = basis(cam), r = radiusPx(cam, width, height);
      drawGrid(b, r);
      proj = project(cam, s.vectors, width, height, proj);
      var highlight = s.color.kind === "highlight", matched = highlight ? s.color.code : null;
      var seq = depthOrder(proj.depth, matched), fade = s.fade, W = canvas.width, H = canvas.height;
      var image = ctx.getImageData(0, 0, W, H);  // the dots go into the drawing's own pixels, over the grid
      for (var j = 0; j < seq.length; j++) {
        var i = seq[j], muted = highlight && !matched[i];
        var tile = (highlight && !muted ? tiles.match : tiles.base)[spriteOf[i]];
        splat(image.data, W, H, tile, Math.round(proj.x[i] * dpr - tile.w / 2), Math.round(proj.y[i] * dpr - tile.h / 2),
              muted ? fade.muted : proj.depth[i] < 0 ? fade.back : 1);
      }
      ctx.putImageData(image, 0, 0);
      drawReference(b, r);
      placeRing();
      lastDraw = performance.now() - t0;
      if (notify) {
        notify = false;
        if (hooks.drawn) { hooks.drawn(handle, paint, null); } else { shared.draw.setHook(host, paint, null, ""); }
      }
    }

    function screenOf(v) {
      var b = basis(cam), r = radiusPx(cam, width, height);
      return { x: width / 2 + r * (b.right[0] * v[0] + b.right[1] * v[1] + b.right[2] * v[2]),
               y: height / 2 - r * (b.up[0] * v[0] + b.up[1] * v[1] + b.up[2] * v[2]),
               depth: b.towards[0] * v[0] + b.towards[1] * v[1] + b.towards[2] * v[2] };
    }

    function drawReference() {
      ctx.font = "12px sans-serif";
      ctx.textAlign = "center";
      (s.reference || []).forEach(function (ref) {
        var at = screenOf(ref.v);
        ctx.globalAlpha = at.depth < 0 ? s.fade.back : 1;
        ctx.beginPath();
        ctx.arc(at.x, at.y, 3.5, 0, 2 * Math.PI);
        ctx.fillStyle = ref.color;
        ctx.fill();
        ctx.lineWidth = 1;
        ctx.strokeStyle = "#000000";
        ctx.stroke();
        ctx.fillStyle = "#000000";
        ctx.fillText(ref.label, at.x, at.y - 7);
      });
      ctx.globalAlpha = 1;
    }

    // The canvas's offset in the host's pixels (the overlays' frame).
    function offset() {
      var c = canvas.getBoundingClientRect(), h = host.getBoundingClientRect();
      return { left: c.left - h.left, top: c.top - h.top, c: c };
    }

    function placeRing() {
      if (!component) { return; }
      var o = offset();
      // an axis its symmetry leaves undefined (methane's) comes as null: no ring (null * r would put one at the centre)
      var defined = ringed.filter(function (v) { return v && v.every(function (c) { return c !== null && isFinite(c); }); });
      component.ring(host, defined.map(function (v) {
        var at = screenOf(v);
        return { px: o.left + at.x, py: o.top + at.y };
      }));
    }

    // The dot nearest to a mouse event within PICK_PX: on the near hemisphere first. Null when none.
    function pickAt(ev) {
      var o = offset(), px = ev.clientX - o.c.left, py = ev.clientY - o.c.top;
      if (!proj || px < 0 || py < 0 || px > o.c.width || py > o.c.height) { return null; }
      var nearest = shared.nearestPoint, front = new Float64Array(proj.x.length);
      for (var i = 0; i < front.length; i++) { front[i] = proj.depth[i] >= 0 ? proj.x[i] : NaN; }
      var k = nearest(front, proj.y, s.keys, px, py, PICK_PX);
      if (k < 0) { k = nearest(proj.x, proj.y, s.keys, px, py, PICK_PX); }
      var at = { px: o.left + px, py: o.top + py };
      if (k < 0) { return { at: at, hit: null }; }
      var v = [s.vectors[3 * k], s.vectors[3 * k + 1], s.vectors[3 * k + 2]];
      return { at: at, hit: { id: s.ids[k], axis: s.keys[k] % 3 + 1, key: s.keys[k], index: k, v: v,
                              px: o.left + proj.x[k], py: o.top + proj.y[k] } };
    }

    // The chosen molecule's dots, ringed.
    function ringMolecule(id) {
      var out = [];
      for (var i = 0; i < s.ids.length; i++) {
        if (s.ids[i] === id) { out.push([s.vectors[3 * i], s.vectors[3 * i + 1], s.vectors[3 * i + 2]]); }
      }
      ringed = out;
      schedule();
    }

    var press = null, hoverTimer = null;
    function hideHover() {
      clearTimeout(hoverTimer);
      if (component) { component.hide(host); }
    }
    function hover(ev) {
      var got = pickAt(ev);
      clearTimeout(hoverTimer);
      if (!got || !got.hit || !component) { hideHover(); return; }
      // the card describes the hovered dot's axis, with the map's query (the colour it shows, a SMARTS search)
      var cfg = paint.settings || {}, hit = got.hit;
      var src = { dataset: cfg.dataset, query: Object.assign({ axis: hit.axis }, cfg.query || {}) };
      component.showTip(host, got.at, "molecule " + hit.id + " · axis " + hit.axis, hit);
      hoverTimer = setTimeout(function () { component.showCard(host, got.at, null, hit.id, src); }, component.HOVER_MS);
    }
    function say(text) { if (hooks.say) { hooks.say(text); } }

    function onDown(ev) {
      if (ev.button !== 0) { return; }
      press = { x: ev.clientX, y: ev.clientY, lastX: ev.clientX, lastY: ev.clientY, turning: false };
      if (canvas.setPointerCapture && ev.pointerId !== undefined) { canvas.setPointerCapture(ev.pointerId); }
    }
    function onMove(ev) {
      if (!press) { hover(ev); return; }
      if (!press.turning && Math.abs(ev.clientX - press.x) + Math.abs(ev.clientY - press.y) <= CLICK_SLOP_PX) { return; }
      if (!press.turning) { press.turning = true; canvas.style.cursor = "grabbing"; hideHover(); }
      cam = dragged(cam, ev.clientX - press.lastX, ev.clientY - press.lastY, radiusPx(cam, width, height));
      press.lastX = ev.clientX;
      press.lastY = ev.clientY;
      schedule();
    }
    function onUp(ev) {
      var was = press;
      press = null;
      canvas.style.cursor = "grab";
      if (!was || was.turning) { return; }
      var got = pickAt(ev);
      if (!got) { return; }
      if (!got.hit) {
        host.dataset.clicked = "none";
        say("No molecule within 5 px of that click; click closer to a point.");
        return;
      }
      host.dataset.clicked = got.hit.id;
      say("");
      ringMolecule(got.hit.id);
      var click = ++clicks;
      if (hooks.choose) { hooks.choose(got.hit.id, got.hit, null, ev, function () { return click === clicks; }); }
    }
    function onWheel(ev) {
      ev.preventDefault();
      var z = cam.zoom * Math.exp(-ev.deltaY * 0.0015);
      cam = Object.assign({}, cam, { zoom: Math.max(ZOOM_LIMITS[0], Math.min(ZOOM_LIMITS[1], z)) });
      hideHover();
      schedule();
    }
    function onReset() { reset(); }
    function reset() { cam = Object.assign({}, START); schedule(); }

    canvas.addEventListener("pointerdown", onDown);
    canvas.addEventListener("pointermove", onMove);
    canvas.addEventListener("pointerup", onUp);
    canvas.addEventListener("pointerleave", function () { if (!press) { hideHover(); } });
    canvas.addEventListener("wheel", onWheel, { passive: false });
    canvas.addEventListener("dblclick", onReset);
    var resized = window.ResizeObserver ? new ResizeObserver(schedule) : null;
    if (resized) { resized.observe(canvas); } else { window.addEventListener("resize", schedule); }

    function exportBlob(format) {
      var titleH = 24, out = document.createElement("canvas"), k = canvas.width / Math.max(1, width);
      out.width = canvas.width;
      out.height = canvas.height + Math.round(titleH * k);
      var g = out.getContext("2d");
      g.fillStyle = "white";
      g.fillRect(0, 0, out.width, out.height);
      g.fillStyle = "black";
      g.font = Math.round(14 * k) + "px sans-serif";
      g.fillText(titleEl.textContent, 4 * k, 16 * k);
      g.drawImage(canvas, 0, Math.round(titleH * k));
      return new Promise(function (resolve) { out.toBlob(resolve, "image/png"); }).then(function (png) {
        if (format !== "svg") { return png; }
        return new Promise(function (resolve) {
          var reader = new FileReader();
          reader.onload = function () {
            resolve(new Blob(['<svg xmlns="http://www.w3.org/2000/svg" width="' + out.width / k + '" height="' + out.height / k +
              '"><image href="' + reader.result + '" width="100%" height="100%"/><\/svg>'], { type: "image/svg+xml" }));
          };
          reader.readAsDataURL(png);
        });
      });
    }

    function shown(p) { setPaint(p); notify = true; schedule(); }
    function unhook(h) {  // the test hook and the click's mark off `h`, the ring and tooltip with them
      hideHover();
      if (component) { component.ring(h, []); }
      ["data-drawn", "data-mode", "data-token", "data-zoom", "data-clicked"].forEach(function (a) { h.removeAttribute(a); });
      h._hookToken = null;
      h._mapHandle = null;
    }
    var handle = {
      host: host,
      paint: function () { return paint; },
      update: function (p) {
        if (p && p.view && p.view !== "sphere") { throw new Error("a sphere drawing cannot show a " + p.view + " paint"); }
        shown(p);
      },
      // The drawing moved to `next` (Dash's map box taking the first paint's over): the same canvas, camera and
      // ring, the new owner's hooks.
      moveTo: function (next, nextHooks) {
        unhook(host);
        host = handle.host = next;
        hooks = nextHooks || {};
        host.style.position = host.style.position || "relative";
        host.append(box);
        host._mapHandle = handle;
        notify = true;
        schedule();
      },
      destroy: function () {
        if (queued) { cancelAnimationFrame(queued); queued = 0; }
        if (resized) { resized.disconnect(); } else { window.removeEventListener("resize", schedule); }
        unhook(host);
        box.remove();
      },
      // What is shown, as a download (Dash's export buttons): the title over the canvas's pixels, a PNG, or an SVG
      // holding that PNG (the dots are pixels already).
      save: function (format) {
        exportBlob(format).then(function (blob) {
          host.setAttribute("data-exported", format + ":" + blob.size);
          host._exported = blob;  // for tests: what was downloaded
          shared.draw.download(blob, "orientscope-" + ((paint.settings || {}).dataset || "map") + "-sphere." + format);
        });
      },
      region: function () { return null; },
      zoom: function () {},
      showSelection: function () {},
      // the selected molecule's axes [[x, y, z], ...] (Dash's selected_ring), ringed as the sphere turns
      ring: function (vectors) { ringed = vectors || []; schedule(); },
      ringMolecule: ringMolecule,
      // what a test or benchmark reads: the camera, the drawing's size in px and the last frame's draw time in ms
      camera: function () {
        return Object.assign({ width: width, height: height, radius: radiusPx(cam, width, height), drawMs: lastDraw }, cam);
      },
      reset: reset,
      canvas: canvas
    };
    host._mapHandle = handle;
    shown(paint);
    return handle;
  }

  shared.sphere = { render: render, basis: basis, project: project, dragged: dragged, radiusPx: radiusPx, START: START };
  if (shared.draw) { shared.draw.register("sphere", render); }  // map_draw.js, loaded before this file
})();
