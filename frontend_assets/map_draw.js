/* The map's renderer, written once for the page's first paint (app/first_paint.py inlines this file before Dash's
   bundle) and for Dash's page (loaded as an asset; a clientside callback hands it the paint store): the Mollweide
   plane views, the flat map (its image, or its points below the point budget) and the density view's two linked
   maps, drawn from a paint of GET /api/datasets/{id}/map/paint (app/map_paint.py region_paint).

     var handle = window.orientscopeMap.draw(host, paint, hooks);
     window.orientscopeMap.draw.register(view, renderer)   // renderer(host, paint, hooks) -> handle, by paint.view
                                                           // (this file: "map", "density"; map_sphere.js: "sphere")

   Drawn: SVG in map units (viewBox; y down) for the image, outline, graticule, stars, the lasso and the zoom box; a
   <canvas> for the points (up to ORIENTSCOPE_MAP_POINT_BUDGET = 30,000 in view: SVG circles are too slow); the title
   and the legend (swatches, colour bar). Interaction: wheel zoom, drag = box zoom, a pan mode, a box and a lasso
   selection mode, double-click and "whole map" reset, PNG and SVG export of what is shown (handle.save, for the
   page's own export buttons, which serve every view: orientscope.js exportMap; the toolbar has no second set). A zoom
   redraws what is shown at once at the new scale, then asks the REST resource for the region's paint; only the
   newest answer is drawn. The click's pick, the hover, the selection ring and the density cells' words are
   map_component.js's, on this drawing's surface (svgSurface).

   handle: {update(paint), region() -> {x0, x1, y0, y1} (Mollweide) or null for the whole map, ring(points in map
            units [[x, y], ...]), zoom(region|null), save("png"|"svg") (a download), exportImage("png"|"svg") ->
            Promise of a Blob, destroy()}.
   hooks:  {onRegion(region|null) after a zoom, pan or reset settles, onSelect(polygon|null, kind) after a box or
            lasso selection (Mollweide [[x, y], ...]; kind "box": the box's four corners, or "lasso"),
            choose(id, hit, panel, ev) after a click picks a molecule, say(text), drawn(handle, paint, image) once a
            paint is on screen (default: the test hook below)}.
   Test hook on host: data-mode, data-drawn and data-token of the paint on screen, data-zoom (the region, "" for the
   whole map), removed while a region's paint is on its way. */
(function () {
  "use strict";
  var shared = window.orientscopeMap = window.orientscopeMap || {};
  if (shared.draw) { return; }  // inlined in the first paint and loaded again by Dash
  var SVG_NS = "http://www.w3.org/2000/svg";
  var MAP_SCALE = 10000;  // map units per Mollweide unit (backend/figures/plots.py MAP_SCALE)
  // The whole map in map units, SVG's y down (plots.py MAP_RANGE_X, MAP_RANGE_Y: ±2.95 and ±1.5)
  var HOME = { x: -29500, y: -15000, w: 59000, h: 30000 };
  var MIN_WIDTH = HOME.w / 4000;  // the deepest zoom: about a pixel of the image grid's limit
  var SETTLE_MS = 250;  // a wheel's ticks are one zoom: its region is asked for once they stop
  var BOX_MIN_PX = 4;
  // the box being dragged: a zoom's, and a box selection's (the look of the selection's outline, drawLasso)
  var ZOOM_STYLE = { "class": "zoombox", fill: "rgba(0,0,0,0.08)", stroke: "#333", "stroke-width": 1,
                     "vector-effect": "non-scaling-stroke" };
  var BOX_STYLE = { "class": "selectbox", fill: "rgba(0,0,0,0.06)", stroke: "#333", "stroke-width": 1.2,
                    "stroke-dasharray": "4 3", "vector-effect": "non-scaling-stroke" };
  var WHEEL_RATE = 0.002;
  var DENSITY_POINTS_W = 560;  // plots.py DENSITY_POINTS_PX: the plot a density map's point radius was set for
  var MAX_PIXELS = 4096;  // services/map_raster.py MAX_PIXELS: a region's pixel size

  var renderers = {};
  function draw(host, paint, hooks) {
    var renderer = renderers[paint && paint.view];
    if (!renderer) { throw new Error("no map renderer for view " + (paint && paint.view)); }
    return renderer(host, paint, hooks || {});
  }
  draw.register = function (view, renderer) { renderers[view] = renderer; };
  draw.renderer = function (view) { return renderers[view] || null; };

  // ---------------------------------------------------------------- small helpers
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) { e.appendChild(c); });
    return e;
  }

  function svgEl(tag, attrs) {
    var e = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    return e;
  }

  function pathData(points) {
    var d = "", down = false;
    (points || []).forEach(function (p) {
      if (!p) { down = false; return; }
      d += (down ? "L" : "M") + p[0] + " " + p[1];
      down = true;
    });
    return d;
  }

  // A typed-array spec of the paint ({dtype: "i2", bdata: base64}) or a plain list, as numbers (decoded once).
  var TYPES = { i1: Int8Array, u1: Uint8Array, i2: Int16Array, u2: Uint16Array, i4: Int32Array, u4: Uint32Array,
                f4: Float32Array, f8: Float64Array };
  function numbers(spec) {
    if (Array.isArray(spec)) { return spec; }
    if (spec._decoded) { return spec._decoded; }
    var bin = atob(spec.bdata), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    Object.defineProperty(spec, "_decoded", { value: new TYPES[spec.dtype](bytes.buffer), enumerable: false });
    return spec._decoded;
  }

  // view boxes (map units, y down) and regions (Mollweide units, y up)
  function regionOf(vb) {
    return { x0: vb.x / MAP_SCALE, x1: (vb.x + vb.w) / MAP_SCALE, y0: -(vb.y + vb.h) / MAP_SCALE, y1: -vb.y / MAP_SCALE };
  }
  function boxOf(r) {
    return { x: r.x0 * MAP_SCALE, y: -r.y1 * MAP_SCALE, w: (r.x1 - r.x0) * MAP_SCALE, h: (r.y1 - r.y0) * MAP_SCALE };
  }
  // `vb` widened (or heightened) about its centre to the stage's aspect (the whole map's), within the limits
  function fitted(vb) {
    var aspect = HOME.w / HOME.h, w = vb.w, h = vb.h;
    if (w / h > aspect) { h = w / aspect; } else { w = h * aspect; }
    w = Math.min(HOME.w, Math.max(MIN_WIDTH, w));
    if (w >= HOME.w) { return { x: HOME.x, y: HOME.y, w: HOME.w, h: HOME.h }; }  // the whole map
    h = w / aspect;
    // about the box's own centre (a zoom box at the map's edge keeps as much on each side), kept on the map
    var cx = Math.min(HOME.x + HOME.w, Math.max(HOME.x, vb.x + vb.w / 2));
    var cy = Math.min(HOME.y + HOME.h, Math.max(HOME.y, vb.y + vb.h / 2));
    return { x: cx - w / 2, y: cy - h / 2, w: w, h: h };
  }
  function isHome(vb) { return vb.w >= HOME.w * (1 - 1e-6); }
  function sameBox(a, b) {
    var tol = 1e-6 * HOME.w;
    return !!a && !!b && Math.abs(a.x - b.x) < tol && Math.abs(a.y - b.y) < tol && Math.abs(a.w - b.w) < tol;
  }
  function zoomText(vb) {
    if (isHome(vb)) { return ""; }
    var r = regionOf(vb);
    return [r.x0, r.x1, r.y0, r.y1].map(function (v) { return v.toFixed(4); }).join(",");
  }
  function zoomRegion(text) {  // ?zoom='s "x0,x1,y0,y1" as a region, or null
    var p = String(text || "").split(",").map(Number);
    return p.length === 4 && p.every(isFinite) && p[1] > p[0] && p[3] > p[2] ? { x0: p[0], x1: p[1], y0: p[2], y1: p[3] } : null;
  }

  function rest() { return shared.rest; }

  // ---------------------------------------------------------------- the surface (map_component.js)
  // A drawing's SVG viewBox (map units, SVG y down) as the component's surface, over `box` (the overlays' parent).
  // Over a map's image the pick counts on the image's own pixel grid (settings().grid); elsewhere (points, the
  // density view's cells) on the drawing's pixels on screen. `table`: the control map's (its hover and clicks pick on
  // the control's molecules).
  // `box` may be a function answering the element: a drawing can move to another page element (Dash's, from the
  // first paint's).
  function svgSurface(box, svg, settings, table) {
    function parent() { return typeof box === "function" ? box() : box; }
    function frame() {
      var r = svg.getBoundingClientRect(), b = parent().getBoundingClientRect();
      return { r: r, left: r.left - b.left, top: r.top - b.top };
    }
    function vb() { return svg.viewBox.baseVal; }
    return {
      get host() { return parent(); },
      svg: svg,
      // also `unit`, viewBox units per screen pixel, and the SVG point (sx, sy), for the sphere's dots
      toMap: function (ev) {
        var f = frame(), v = vb(), s = settings().scale || MAP_SCALE;
        var fx = (ev.clientX - f.r.left) / f.r.width, fy = (ev.clientY - f.r.top) / f.r.height;
        if (!(fx >= 0 && fx <= 1 && fy >= 0 && fy <= 1)) { return null; }
        var sx = v.x + fx * v.width, sy = v.y + fy * v.height;
        return { x: sx / s, y: -sy / s, sx: sx, sy: sy, unit: v.width / f.r.width,
                 px: f.left + fx * f.r.width, py: f.top + fy * f.r.height };
      },
      grid: function () {
        var r = svg.getBoundingClientRect(), v = vb(), cfg = settings(), s = cfg.scale || MAP_SCALE;
        return cfg.grid || { x0: v.x / s, x1: (v.x + v.width) / s, y0: -(v.y + v.height) / s, y1: -v.y / s,
                             width: Math.max(1, Math.round(r.width)), height: Math.max(1, Math.round(r.height)) };
      },
      // (x, y): Mollweide units, or the viewBox's own units with `svgUnits` (the sphere); null outside the drawing
      toPixel: function (x, y, svgUnits) {
        var f = frame(), v = vb(), s = settings().scale || MAP_SCALE;
        var sx = svgUnits ? x : x * s, sy = svgUnits ? y : -y * s;
        var fx = (sx - v.x) / v.width, fy = (sy - v.y) / v.height;
        if (!(fx >= -1e-9 && fx <= 1 + 1e-9 && fy >= -1e-9 && fy <= 1 + 1e-9)) { return null; }
        return { px: f.left + fx * f.r.width, py: f.top + fy * f.r.height };
      },
      // map/preview's kind is the flat map's (colour or count); the density view's hover asks for the molecule only
      source: function () {
        var cfg = settings();
        return { dataset: cfg.dataset, query: Object.assign({}, cfg.query, table ? { table: table } : {}),
                 kind: cfg.view === "map" ? cfg.kind : null };
      }
    };
  }

  // ---------------------------------------------------------------- the test hook
  // Set once the paint's pixels are on screen: its image decoded and the frame with it painted (two frames).
  function setHook(host, paint, image, zoom) {
    var token = (paint.hook && paint.hook.token) || "";
    host._hookToken = token;
    var decoded = !image || !image.decode || (image.complete && image.naturalWidth > 0) ? Promise.resolve() : image.decode();
    decoded.catch(function () {}).then(function () {
      requestAnimationFrame(function () {
        requestAnimationFrame(function () {
          if (host._hookToken !== token || !host.isConnected) { return; }  // a later paint took over
          host.setAttribute("data-mode", paint.hook.mode);
          host.setAttribute("data-drawn", paint.hook.drawn);
          host.setAttribute("data-token", token);
          host.setAttribute("data-zoom", zoom);
        });
      });
    });
  }
  function clearHook(host) {
    host._hookToken = null;
    ["data-drawn", "data-mode"].forEach(function (a) { host.removeAttribute(a); });
  }
  draw.setHook = setHook;

  // ---------------------------------------------------------------- one drawing: title, stage, legend, hint
  var FILL = "position:absolute;left:0;top:0;width:100%;height:100%;";

  function Drawing(parent, attrs) {
    this.box = el("div", Object.assign({ "class": "map-drawing", style: "position:relative" }, attrs || {}));
    this.title = el("p", { "class": "map-title", style: "font:14px sans-serif;margin:4px 0" });
    this.image = null;
    // inline styles: the first paint draws before the page's stylesheets have loaded
    this.canvas = el("canvas", { "class": "map-points", style: FILL + "pointer-events:none" });
    this.svg = svgEl("svg", { "class": "map-svg", viewBox: [HOME.x, HOME.y, HOME.w, HOME.h].join(" "),
                              preserveAspectRatio: "none", role: "img", style: FILL + "display:block" });
    this.stage = el("div", { "class": "map-stage", style: "position:relative;overflow:hidden;width:100%;" +
                             "aspect-ratio:" + HOME.w + " / " + HOME.h }, [this.canvas, this.svg]);
    this.legend = el("div", { "class": "map-legend" });
    this.hint = el("p", { "class": "note map-hint" });
    this.box.append(this.title, this.stage, this.legend, this.hint);
    parent.appendChild(this.box);
    this.map = null;  // the paint's map: {title, image, layers, stars, points, grid, legend}
    this.ringed = [];  // map units [[x, y], ...]: the selection ring's points
  }

  // A map paint's image (x, y, width, height in map units, SVG's y down): the page's own <img> when the page HTML
  // carries it (app/first_paint.py placeholder_html: loaded while the page was parsed), else a new one.
  Drawing.prototype.setImage = function (im, pixelated) {
    var image = im && ((im.layer && document.getElementById(im.layer)) || el("img", { alt: "" }));
    if (image && !im.layer && image.getAttribute("src") !== im.source) { image.src = im.source; }
    if (this.image && this.image !== image) { this.image.remove(); }
    this.image = image;
    if (!image) { return; }
    image.classList.add("map-image");
    image.hidden = false;
    image.style.position = "absolute";
    image.style.maxWidth = "none";
    image.style.pointerEvents = "none";
    image.style.imageRendering = pixelated ? "pixelated" : "";
    if (image.parentNode !== this.stage) { this.stage.insertBefore(image, this.stage.firstChild); }
  };

  Drawing.prototype.setMap = function (map, frame, pixelated) {
    this.map = map;
    this.title.textContent = map.title || "";
    this.svg.setAttribute("aria-label", map.title || "");
    this.setImage(map.image, pixelated);
    // outline and graticule: hairlines at any zoom
    this.svg.replaceChildren(
      svgEl("path", { "class": "graticule", d: pathData(frame.graticule), fill: "none", stroke: "#999" }),
      svgEl("path", { "class": "outline", d: pathData(frame.outline), fill: "none", stroke: "#555" }),
      svgEl("g", { "class": "stars" }), svgEl("g", { "class": "overlay" }));
    drawLegend(this.legend, map.legend);
  };

  // Everything placed by the view box: the image, the stars (their size in screen pixels), the points' canvas.
  Drawing.prototype.place = function (vb) {
    this.svg.setAttribute("viewBox", [vb.x, vb.y, vb.w, vb.h].join(" "));
    var im = this.map && this.map.image;
    if (this.image && im) {
      var s = this.image.style;
      s.left = 100 * (im.x - vb.x) / vb.w + "%";
      s.top = 100 * (im.y - vb.y) / vb.h + "%";
      s.width = 100 * im.width / vb.w + "%";
      s.height = 100 * im.height / vb.h + "%";
    }
    var k = vb.w / HOME.w, stars = this.svg.querySelector("g.stars");
    // hairlines at any zoom, in map units (a non-scaling stroke doubled the landing's first render after the
    // stylesheets): about 0.7 and 1 px of a drawing 900 px wide
    this.svg.querySelector("path.graticule").setAttribute("stroke-width", 45 * k);
    this.svg.querySelector("path.outline").setAttribute("stroke-width", 65 * k);
    stars.replaceChildren();
    ((this.map && this.map.stars) || []).forEach(function (st) {
      var star = svgEl("text", { x: st.x, y: st.y, "font-size": 1100 * k, "text-anchor": "middle",
                                 "dominant-baseline": "central", fill: st.color, stroke: "#000", "stroke-width": 40 * k });
      star.textContent = "\u2605";
      if (st.title) {  // the browser's own hover words (the server's)
        var tip = svgEl("title");
        tip.textContent = st.title;
        star.appendChild(tip);
      }
      var label = svgEl("text", { x: st.x, y: st.y - 1300 * k, "font-size": 700 * k, "text-anchor": "middle" });
      label.textContent = st.label;
      stars.append(star, label);
    });
    this.paintPoints(vb);
  };

  Drawing.prototype.paintPoints = function (vb) {
    var map = this.map, c = this.canvas;
    var some = map && ((map.layers && map.layers.length) || (map.points && map.points.x.length));
    // nothing to draw on a clean canvas: no layout asked for (the first paint draws before the stylesheets have
    // loaded, where reading the stage's size forced a 15 ms layout of the page on every landing)
    if (!some && !c._inked) { return; }
    c._inked = !!some;
    var w = this.stage.clientWidth, h = this.stage.clientHeight, dpr = window.devicePixelRatio || 1;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
    }
    var ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    if (!some || !w) { return; }
    var kx = w / vb.w, ky = h / vb.h;
    drawLayers(ctx, map.layers || [], vb, kx, ky);
    var p = map.points;  // a density map's small set: per-point colours, radius in map units of the whole map
    if (p && p.x.length) {
      var r = p.r / (HOME.w / DENSITY_POINTS_W), sw = (p.stroke_width || 0) / (HOME.w / DENSITY_POINTS_W);
      for (var i = 0; i < p.x.length; i++) {
        ctx.beginPath();
        ctx.arc((p.x[i] - vb.x) * kx, (p.y[i] - vb.y) * ky, Math.max(r, 1), 0, 2 * Math.PI);
        ctx.fillStyle = p.color[i];
        ctx.fill();
        if (p.stroke && sw > 0) { ctx.lineWidth = sw; ctx.strokeStyle = p.stroke; ctx.stroke(); }
      }
    }
  };

  // The points, one path per layer (one colour): 30,000 arcs in about 10 ms.
  function drawLayers(ctx, layers, vb, kx, ky) {
    layers.forEach(function (layer) {
      var xs = numbers(layer.x), ys = numbers(layer.y), r = Math.max(layer.size / 2, 0.5);
      ctx.globalAlpha = layer.opacity;
      ctx.beginPath();
      for (var i = 0; i < xs.length; i++) {
        var px = (xs[i] - vb.x) * kx, py = (ys[i] - vb.y) * ky;
        ctx.moveTo(px + r, py);
        ctx.arc(px, py, r, 0, 2 * Math.PI);
      }
      if (layer.ring) {
        ctx.lineWidth = layer.stroke_width || 1.5;
        ctx.strokeStyle = layer.stroke || layer.color;
        ctx.stroke();
      } else {
        ctx.fillStyle = layer.color;
        ctx.fill();
        if (layer.stroke && layer.stroke_width > 0) {
          ctx.lineWidth = layer.stroke_width;
          ctx.strokeStyle = layer.stroke;
          ctx.stroke();
        }
      }
      ctx.globalAlpha = 1;
    });
  }

  // The legend: a swatch per entry (a dot, a ring or a star) and the continuous colour bar with its ticks (their
  // words are the server's: backend/core/numbers.py).
  function drawLegend(box, legend) {
    box.replaceChildren();
    if (!legend) { return; }
    (legend.items || []).forEach(function (item) {
      var sw = el("span", { "class": "legend-swatch legend-" + item.symbol });
      if (item.symbol === "star") { sw.textContent = "\u2605"; sw.style.color = item.color || ""; }
      else if (item.symbol === "ring") { sw.style.borderColor = item.color || "#000"; }
      else { sw.style.background = item.color || "#888"; }
      var label = el("span", { "class": "legend-label" });
      label.textContent = item.label;
      box.appendChild(el("span", { "class": "legend-item", "data-label": item.label }, [sw, label]));
    });
    var bar = legend.colorbar;
    if (bar && bar.colors && bar.colors.length) {
      var title = el("span", { "class": "colorbar-title" });
      title.textContent = bar.title || "";
      var strip = el("div", { "class": "colorbar-strip" });
      strip.style.background = "linear-gradient(to right, " + bar.colors.join(", ") + ")";
      var ticks = el("div", { "class": "colorbar-ticks" });
      var span = (bar.cmax - bar.cmin) || 1;
      (bar.ticks || []).forEach(function (t) {
        var tick = el("span", { "class": "colorbar-tick" });
        tick.textContent = t.text;
        tick.style.left = Math.max(0, Math.min(100, 100 * (t.value - bar.cmin) / span)) + "%";
        ticks.appendChild(tick);
      });
      box.appendChild(el("div", { "class": "colorbar" }, [title, strip, ticks]));
    }
  }

  // ---------------------------------------------------------------- export (what is shown)
  function svgText(d, vb, width, height, withImages) {
    var inner = d.svg.innerHTML, head = "";
    if (withImages && d.image && d.map.image) {
      var im = d.map.image;
      head += '<image href="' + d.image.src + '" x="' + im.x + '" y="' + im.y + '" width="' + im.width + '" height="' +
        im.height + '" preserveAspectRatio="none"' + (d.image.style.imageRendering ? ' style="image-rendering:pixelated"' : "") + "/>";
    }
    if (withImages) {  // the points as circles, sized in screen pixels of the drawing on screen
      var unit = vb.w / Math.max(1, d.stage.clientWidth), dots = [];
      (d.map.layers || []).forEach(function (layer) {
        var xs = numbers(layer.x), ys = numbers(layer.y), r = Math.max(layer.size / 2, 0.5) * unit;
        var style = layer.ring ? 'fill="none" stroke="' + (layer.stroke || layer.color) + '" stroke-width="' +
          (layer.stroke_width || 1.5) * unit + '"' : 'fill="' + layer.color + '" fill-opacity="' + layer.opacity + '"';
        dots.push("<g " + style + ">");
        for (var i = 0; i < xs.length; i++) { dots.push('<circle cx="' + xs[i] + '" cy="' + ys[i] + '" r="' + r + '"/>'); }
        dots.push("<\/g>");
      });
      head += dots.join("");
    }
    return '<svg xmlns="' + SVG_NS + '" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="' + [vb.x, vb.y, vb.w, vb.h].join(" ") +
      '" width="' + width + '" height="' + height + '" preserveAspectRatio="none">' + head + inner + "<\/svg>";
  }

  function loadImage(src) {
    return new Promise(function (resolve, reject) {
      var img = new Image();
      img.onload = function () { resolve(img); };
      img.onerror = function () { reject(new Error("the map's drawing did not load for export")); };
      img.src = src;
    });
  }

  // The drawings side by side, each under its title: a PNG at twice the screen's pixels (the image and the points'
  // canvas, then the SVG's lines and stars over them) or one SVG holding them all (the image inline).
  function exportImage(drawings, vb, format) {
    var scale = 2, titleH = 24, gap = 12;
    var sizes = drawings.map(function (d) { return { w: Math.max(1, d.stage.clientWidth), h: Math.max(1, d.stage.clientHeight) }; });
    var width = sizes.reduce(function (s, z) { return s + z.w; }, 0) + gap * (drawings.length - 1);
    var height = titleH + Math.max.apply(null, sizes.map(function (z) { return z.h; }));
    function escape(t) { return String(t).replace(/&/g, "&amp;").replace(/[<]/g, "&lt;"); }
    if (format === "svg") {
      var x = 0, parts = drawings.map(function (d, i) {
        var at = x;
        x += sizes[i].w + gap;
        return '<text x="' + at + '" y="16" font-family="sans-serif" font-size="14">' + escape(d.title.textContent) +
          '<\/text><g transform="translate(' + at + "," + titleH + ')">' + svgText(d, vb, sizes[i].w, sizes[i].h, true) + "<\/g>";
      });
      var text = '<svg xmlns="' + SVG_NS + '" width="' + width + '" height="' + height + '"><rect width="100%" height="100%" fill="white"/>' +
        parts.join("") + "<\/svg>";
      return Promise.resolve(new Blob([text], { type: "image/svg+xml" }));
    }
    var canvas = document.createElement("canvas");
    canvas.width = width * scale;
    canvas.height = height * scale;
    var ctx = canvas.getContext("2d");
    ctx.scale(scale, scale);
    ctx.fillStyle = "white";
    ctx.fillRect(0, 0, width, height);
    var x0 = 0, steps = drawings.map(function (d, i) {
      var at = x0, z = sizes[i];
      x0 += z.w + gap;
      var lines = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svgText(d, vb, z.w, z.h, false));
      return loadImage(lines).then(function (over) {
        ctx.fillStyle = "black";
        ctx.font = "14px sans-serif";
        ctx.fillText(d.title.textContent, at, 16);
        ctx.save();
        ctx.beginPath();
        ctx.rect(at, titleH, z.w, z.h);
        ctx.clip();
        var im = d.map.image;
        if (d.image && im) {
          ctx.imageSmoothingEnabled = !d.image.style.imageRendering;
          ctx.drawImage(d.image, at + (im.x - vb.x) / vb.w * z.w, titleH + (im.y - vb.y) / vb.h * z.h,
                        im.width / vb.w * z.w, im.height / vb.h * z.h);
        }
        ctx.drawImage(d.canvas, at, titleH, z.w, z.h);
        ctx.drawImage(over, at, titleH, z.w, z.h);
        ctx.restore();
      });
    });
    return Promise.all(steps).then(function () {
      return new Promise(function (resolve) { canvas.toBlob(resolve, "image/png"); });
    });
  }

  function download(blob, name) {
    var a = el("a", { href: URL.createObjectURL(blob), download: name });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(function () { URL.revokeObjectURL(a.href); }, 1000);
  }

  // ---------------------------------------------------------------- the selection in the URL's form
  // A box or lasso selection as the URL's sel= spells it (backend/core/selection.py): Dash's map puts it into the
  // URL and lists its molecules (app/selection_panel.py; the server decides which molecules it holds), and the page's
  // first paint writes it there itself until Dash takes its drawing over.
  var SELECTION_MAX_VERTICES = 200;  // backend/core/selection.py MAX_VERTICES
  var SELECTION_LIMIT = 6;  // backend/core/selection.py MAX_COORDINATE

  function selectionCoordinate(v) {
    return Math.max(-SELECTION_LIMIT, Math.min(SELECTION_LIMIT, v)).toFixed(4);
  }

  // "lasso:x1,y1,..." of a polygon ([[x, y], ...] Mollweide units, thinned to fit a URL), or with `kind` "box"
  // "box:x0,x1,y0,y1" of its bounds (the box selection's four corners); null for none.
  function selectionText(polygon, kind) {
    if (!polygon || polygon.length < 3) { return null; }
    if (kind === "box") {
      var xs = polygon.map(function (p) { return p[0]; }), ys = polygon.map(function (p) { return p[1]; });
      return "box:" + [Math.min.apply(null, xs), Math.max.apply(null, xs), Math.min.apply(null, ys),
                       Math.max.apply(null, ys)].map(selectionCoordinate).join(",");
    }
    var step = Math.ceil(polygon.length / SELECTION_MAX_VERTICES), out = [];
    for (var i = 0; i < polygon.length; i += step) {
      out.push(selectionCoordinate(polygon[i][0]), selectionCoordinate(polygon[i][1]));
    }
    return out.length >= 6 ? "lasso:" + out.join(",") : null;
  }

  // [[x, y], ...] Mollweide vertices of a selection's URL text ("box:x0,x1,y0,y1" or "lasso:..."), or [] for none.
  function selectionVertices(text) {
    var kind = (text || "").split(":")[0], v = (text || "").slice(kind.length + 1).split(",").map(Number);
    if (kind === "box" && v.length === 4) { return [[v[0], v[2]], [v[1], v[2]], [v[1], v[3]], [v[0], v[3]]]; }
    var out = [];
    if (kind === "lasso") { for (var i = 0; i + 1 < v.length; i += 2) { out.push([v[i], v[i + 1]]); } }
    return out;
  }

  // ---------------------------------------------------------------- the plane views: map and density
  // The toolbar's drag modes: zoom (a box, the default), pan, and the two selections: a box (the URL's sel=box:) and
  // a lasso (sel=lasso:), backend/core/selection.py.
  var MODES = [["zoom", "Box zoom", "drag a box to zoom in"], ["pan", "Pan", "drag to move the map"],
               ["box", "Box select", "drag a box around molecules to select them"],
               ["lasso", "Lasso", "draw around molecules to select them"]];

  function planeRenderer(host, paint, hooks) {
    var density = paint.view === "density";
    var cfg = paint.settings, current = paint, vb = fitted(boxOf(paint.region || regionOf(HOME)));
    var mode = "zoom", settleTimer = null, asked = 0, lasso = null, selection = null, listeners = [];
    var component = shared.component;

    // Everything drawn is in `root`, the host's last child: the host may hold other children (Dash's graph box).
    var root = el("div", { "class": "map-plane" });
    host.appendChild(root);
    host.classList.add("map-drawn");
    host.style.position = host.style.position || "relative";
    var toolbar = el("div", { "class": "map-toolbar", role: "toolbar" });
    var modeButtons = {};
    // The density view lists no selection (app/selection_panel.py: the flat map's molecules only), so it offers none.
    MODES.filter(function (m) { return !density || (m[0] !== "box" && m[0] !== "lasso"); }).forEach(function (m) {
      var b = el("button", { type: "button", "class": "map-mode", "data-mode": m[0], title: m[2], "aria-pressed": "false" });
      b.textContent = m[1];
      b.addEventListener("click", function () { setMode(m[0]); });
      modeButtons[m[0]] = b;
      toolbar.appendChild(b);
    });
    var reset = el("button", { type: "button", "class": "map-reset",
                               title: "show the whole map (or double-click the map)" });
    reset.textContent = "Whole map";
    reset.addEventListener("click", function () { zoomTo(HOME, 0); });
    toolbar.appendChild(reset);
    var row = el("div", { "class": density ? "map-drawings maps" : "map-drawings" });
    root.append(toolbar, row);
    var drawings = [new Drawing(row, { "data-table": "original" })];
    if (density) { drawings.push(new Drawing(row, { "data-table": "control" })); }
    // The overlays' parent (tooltip, card, chooser, ring; the picker's data-clicked): the host for the main map, as
    // tests and pages find them there; the control map's own drawing.
    drawings.forEach(function (d, i) {
      d.main = i === 0;
      d.surface = svgSurface(function () { return d.main ? host : d.box; }, d.svg, function () { return cfg; },
                             i ? "control" : null);
    });

    function say(text) {
      if (hooks.say) { hooks.say(text); } else { drawings[0].hint.textContent = text || ""; }
    }

    function setMode(m) {
      mode = m;
      host.setAttribute("data-drag", m);
      Object.keys(modeButtons).forEach(function (k) { modeButtons[k].setAttribute("aria-pressed", String(k === m)); });
      drawings.forEach(function (d) { d.svg.style.cursor = m === "pan" ? "move" : "crosshair"; });
    }
    setMode("zoom");

    function mapsOf(p) {
      return density ? p.maps : [{ title: p.title, image: p.image, layers: p.layers, stars: p.stars, legend: p.legend }];
    }

    function show(p) {
      current = p;
      cfg = p.settings;
      var maps = mapsOf(p);
      drawings.forEach(function (d, i) { d.setMap(maps[i], p.frame, density); });
      place();
      var image = drawings[0].image;
      if (hooks.drawn) { hooks.drawn(handle, p, image); } else { setHook(host, p, image, zoomText(vb)); }
    }

    function place() {
      drawings.forEach(function (d) { d.place(vb); });
      drawLasso();
      placeRings();
    }

    function placeRings() {
      drawings.forEach(function (d, i) {
        if (!component) { return; }
        var over = d.surface.host;
        if (!d.ringed.length && !over.querySelector(":scope > svg.selection-ring")) { return; }
        var pixels = d.ringed.map(function (p) { return d.surface.toPixel(p[0] / MAP_SCALE, p[1] / MAP_SCALE); });
        component.ring(over, i === 0 ? pixels : []);
      });
    }

    // ------------------------------------------------ zoom, pan and the region's paint
    function zoomTo(box, delay) {
      var next = fitted(box);
      if (sameBox(next, vb)) { return; }
      vb = next;
      if (component) { drawings.forEach(function (d) { component.hide(d.surface.host); }); }
      place();  // at once: the image and points on screen, scaled
      clearTimeout(settleTimer);
      settleTimer = setTimeout(settle, delay === undefined ? SETTLE_MS : delay);
    }

    function settle(again) {  // again: ask even for the region on screen (fillIn)
      var region = isHome(vb) ? null : regionOf(vb);
      if (hooks.onRegion) { hooks.onRegion(region); }
      if (again !== true && covered()) { setHook(host, current, drawings[0].image, zoomText(vb)); return; }
      clearHook(host);
      var mine = ++asked, r = regionOf(vb), stage = drawings[0].stage;
      var params = Object.assign({ view: paint.view }, cfg.query, r, {
        width: Math.min(MAX_PIXELS, Math.max(1, Math.round(stage.clientWidth))),
        height: Math.min(MAX_PIXELS, Math.max(1, Math.round(stage.clientHeight)))
      });
      if (density) { delete params.table; }
      rest().getJson(rest().url(cfg.dataset, "map/paint", params)).then(function (answer) {
        if (mine !== asked || !answer || !host.isConnected) { return; }  // a later zoom asked, or no answer
        show(answer);
      }, function () {});
    }

    // Whether the paint on screen is of the region shown: a paint of a region of another aspect (a link's ?zoom=)
    // leaves part of the stage undrawn, and its own region is asked for.
    function covered() { return sameBox(boxOf(current.region || regionOf(HOME)), vb); }
    // An image drawn at another pixel size than the stage's (the server's first draw is 900 pixels wide) is asked for
    // again at the stage's: the hover's counts are of the image's own pixels, which should be the screen's. The
    // first paint (no onRegion hook) keeps the page's own image: no request while the page loads, and no read of the
    // stage's size, which before the stylesheets have loaded forced a layout of the whole page (120-160 ms of every
    // cold landing, on the 2-core machine: the landing's first paint +40 % against main's, BENCHMARKS.md).
    function sharp() {
      var grid = current.settings && current.settings.grid;
      if (!grid || !hooks.onRegion) { return true; }
      var w = drawings[0].stage.clientWidth;
      return !w || Math.abs(grid.width - w) <= 0.05 * w;
    }
    function fillIn() {
      if (!covered() || !sharp()) { clearTimeout(settleTimer); settleTimer = setTimeout(function () { settle(true); }, 0); }
    }

    function stagePoint(d, ev) {  // the event's point in map units (SVG y down) and the stage's pixels
      var r = d.stage.getBoundingClientRect();
      var fx = (ev.clientX - r.left) / r.width, fy = (ev.clientY - r.top) / r.height;
      return { sx: vb.x + fx * vb.w, sy: vb.y + fy * vb.h, fx: fx, fy: fy, px: ev.clientX - r.left, py: ev.clientY - r.top };
    }

    function wheel(d, ev) {
      ev.preventDefault();
      var p = stagePoint(d, ev), k = Math.exp(ev.deltaY * WHEEL_RATE);
      var w = vb.w * k, h = vb.h * k;
      zoomTo({ x: p.sx - p.fx * w, y: p.sy - p.fy * h, w: w, h: h });
    }

    // A drag: a box to zoom into, a pan, a box or a lasso to select; a press and release in place is a click (the
    // picker's), which in a selection mode also clears the selection.
    function press(d, ev) {
      if (ev.button !== 0) { return; }
      var start = stagePoint(d, ev), startBox = vb, moved = false, shape = null;
      var overlay = d.svg.querySelector("g.overlay");
      if (mode === "lasso") { lasso = [[start.sx, start.sy]]; }
      function move(e) {
        var p = stagePoint(d, e);
        if (!moved && Math.abs(p.px - start.px) + Math.abs(p.py - start.py) < BOX_MIN_PX) { return; }
        moved = true;
        if (mode === "pan") {
          var dx = (p.px - start.px) / d.stage.clientWidth * startBox.w, dy = (p.py - start.py) / d.stage.clientHeight * startBox.h;
          vb = fitted({ x: startBox.x - dx, y: startBox.y - dy, w: startBox.w, h: startBox.h });
          place();
        } else if (mode === "lasso") {
          lasso.push([p.sx, p.sy]);
          drawLasso();
        } else {
          if (!shape) {
            shape = svgEl("rect", mode === "box" ? BOX_STYLE : ZOOM_STYLE);
            overlay.appendChild(shape);
          }
          shape.setAttribute("x", Math.min(start.sx, p.sx));
          shape.setAttribute("y", Math.min(start.sy, p.sy));
          shape.setAttribute("width", Math.abs(p.sx - start.sx));
          shape.setAttribute("height", Math.abs(p.sy - start.sy));
        }
      }
      function up(e) {
        window.removeEventListener("mousemove", move);
        window.removeEventListener("mouseup", up);
        var p = stagePoint(d, e);
        if (shape) { shape.remove(); }
        if (!moved) {
          if (mode === "lasso" || mode === "box") { lasso = null; if (selection) { select(null); } }
          return;
        }
        var wide = Math.abs(p.px - start.px) >= BOX_MIN_PX && Math.abs(p.py - start.py) >= BOX_MIN_PX;
        if (mode === "pan") {
          clearTimeout(settleTimer);
          settleTimer = setTimeout(settle, 0);
        } else if (mode === "lasso") {
          lasso.push([p.sx, p.sy]);
          select(lasso.length >= 3 ? lasso : null);
          lasso = null;
        } else if (mode === "box") {
          if (wide) { select([[start.sx, start.sy], [p.sx, start.sy], [p.sx, p.sy], [start.sx, p.sy]], "box"); }
        } else if (wide) {
          zoomTo({ x: Math.min(start.sx, p.sx), y: Math.min(start.sy, p.sy), w: Math.abs(p.sx - start.sx),
                   h: Math.abs(p.sy - start.sy) }, 0);
        }
      }
      window.addEventListener("mousemove", move);
      window.addEventListener("mouseup", up);
    }

    // The selection (a lasso, or a box's four corners): drawn in map units, handed on in Mollweide units with its
    // kind, "lasso" or "box" (ids.MAP_SELECTION in Dash)
    function select(points, kind) {
      selection = points;
      drawLasso();
      if (hooks.onSelect) {
        hooks.onSelect(points ? points.map(function (p) { return [p[0] / MAP_SCALE, -p[1] / MAP_SCALE]; }) : null,
                       points ? kind || "lasso" : null);
      }
    }
    function drawLasso() {
      drawings.forEach(function (d, i) {
        var overlay = d.svg.querySelector("g.overlay"), pts = i === 0 ? (lasso || selection) : null;
        var path = overlay && overlay.querySelector("path.lasso");
        if (!overlay) { return; }
        if (!pts) { if (path) { path.remove(); } return; }
        if (!path) {
          path = svgEl("path", { "class": "lasso", fill: "rgba(0,0,0,0.06)", stroke: "#333", "stroke-width": 1.2,
                                  "stroke-dasharray": "4 3", "vector-effect": "non-scaling-stroke" });
          overlay.appendChild(path);
        }
        path.setAttribute("d", pathData(pts) + (lasso ? "" : "Z"));
      });
    }

    function showSelection(polygon) {  // Mollweide [[x, y], ...] or null: drawn, not handed on
      selection = polygon && polygon.length >= 3 ? polygon.map(function (p) { return [p[0] * MAP_SCALE, -p[1] * MAP_SCALE]; }) : null;
      drawLasso();
    }

    function save(format) {
      exportImage(drawings, vb, format).then(function (blob) {
        host.setAttribute("data-exported", format + ":" + blob.size);
      host._exported = blob;  // for tests: what was downloaded
        var name = "orientscope-" + (cfg.dataset || "map") + "-" + paint.view + "." + format;
        download(blob, name);
      });
    }

    // ------------------------------------------------ listeners: zoom and drags, clicks and hover
    function on(target, type, fn, opts) {
      target.addEventListener(type, fn, opts);
      listeners.push([target, type, fn, opts]);
    }
    drawings.forEach(function (d, i) {
      on(d.stage, "wheel", function (ev) { wheel(d, ev); }, { passive: false });
      on(d.stage, "mousedown", function (ev) { press(d, ev); });
      on(d.stage, "dblclick", function () { zoomTo(HOME, 0); });
      if (!component) { return; }
      var picks = component.picker(d.surface, {
        say: say, zoomable: true,
        choose: function (id, hit, panel, ev, current) {
          if (i === 0 && hit) { handle.ring([[hit.x * MAP_SCALE, -hit.y * MAP_SCALE]]); }
          if (hooks.choose) { hooks.choose(id, i === 0 ? hit : null, panel, ev, current); }
        }
      });
      on(d.svg, "mousedown", picks.press);
      on(d.svg, "click", picks.click);
      var other = density ? drawings[1 - i] : null;
      var over = component.hover(d.surface, {
        cells: function () { return density && d.map ? d.map.grid : null; },
        other: function () { return other && other.map ? { surface: other.surface, cells: other.map.grid } : null; }
      });
      on(d.svg, "mousemove", over.move);
      on(d.svg, "mouseleave", over.leave);
    });
    // the stage's size changes with the window, and when the page's stylesheets or Dash's layout arrive: what is
    // drawn in pixels follows (the points' canvas, the ring); the image, outline and stars are placed in the stage's
    // own units (not rebuilt in the first paint's first frame, where the observer's first call comes)
    function resized() {
      drawings.forEach(function (d) { d.paintPoints(vb); });
      placeRings();
    }
    var sized = window.ResizeObserver && new ResizeObserver(function () { if (host.isConnected) { resized(); } });
    if (sized) { sized.observe(drawings[0].stage); } else { on(window, "resize", resized); }

    var handle = {
      host: host,
      update: function (p) {
        if (p && p.view && p.view !== paint.view) { throw new Error("a " + paint.view + " drawing cannot show a " + p.view + " paint"); }
        asked++;  // an answer on its way for the old paint is not drawn over this one
        var next = fitted(boxOf(p.region || regionOf(HOME)));
        vb = next;
        show(p);
        fillIn();
      },
      paint: function () { return current; },
      region: function () { return isHome(vb) ? null : regionOf(vb); },
      zoom: function (region) { zoomTo(region ? boxOf(region) : HOME, 0); },
      // the selected molecule's points, map units y up as Dash's ring store holds them ([[x, y], ...])
      ring: function (points) {
        drawings[0].ringed = (points || []).map(function (p) { return [p[0], p[1]]; });
        placeRings();
      },
      selection: function () { return selection; },
      showSelection: showSelection,
      save: save,
      // The drawing moved to `next` (Dash's map box taking the first paint's over), with the new owner's hooks.
      moveTo: function (next, nextHooks) {
        var old = host;
        clearHook(old);
        ["data-token", "data-zoom", "data-clicked"].forEach(function (a) { old.removeAttribute(a); });
        old.classList.remove("map-drawn");
        old._mapHandle = null;
        Array.prototype.slice.call(old.children).forEach(function (c) {  // the overlays: tooltip, card, ring
          if (c !== root && (c.matches(".map-tooltip, .map-chooser, svg.selection-ring") || c.className === "hover-preview")) { c.remove(); }
        });
        host = next;
        hooks = nextHooks || {};
        // a moved image would be reported again to Element Timing (the first paint's presentation mark)
        root.querySelectorAll("[elementtiming]").forEach(function (e) { e.removeAttribute("elementtiming"); });
        host.appendChild(root);
        host.classList.add("map-drawn");
        host.style.position = host.style.position || "relative";
        host._mapHandle = handle;
        setHook(host, current, drawings[0].image, zoomText(vb));
        place();
        fillIn();  // the new owner may ask for the image at its stage's size
      },
      setMode: setMode,
      exportImage: function (format) { return exportImage(drawings, vb, format); },
      surfaces: function () { return drawings.map(function (d) { return d.surface; }); },
      destroy: function () {
        clearTimeout(settleTimer);
        asked++;
        if (sized) { sized.disconnect(); }
        listeners.forEach(function (l) { l[0].removeEventListener(l[1], l[2], l[3]); });
        listeners = [];
        root.remove();
        clearHook(host);
        ["data-token", "data-zoom", "data-clicked", "data-drag"].forEach(function (a) { host.removeAttribute(a); });
        Array.prototype.slice.call(host.querySelectorAll(":scope > .map-tooltip, :scope > svg.selection-ring")).forEach(function (c) { c.remove(); });
        host.classList.remove("map-drawn");
        host._mapHandle = null;
      }
    };
    host._mapHandle = handle;
    show(paint);
    fillIn();
    return handle;
  }

  draw.register("map", planeRenderer);
  draw.register("density", planeRenderer);
  draw.surface = svgSurface;
  draw.el = el;
  draw.svgEl = svgEl;
  draw.zoomText = function (region) { return region ? zoomText(boxOf(region)) : ""; };
  draw.selectionText = selectionText;
  draw.selectionVertices = selectionVertices;
  draw.zoomRegion = zoomRegion;
  draw.download = download;
  draw.HOME = regionOf(HOME);
  shared.draw = draw;
})();
