/* The first paint at work before Dash and plotly.js have loaded: app/first_paint.py inlines this
   file into the page HTML right after the static map or sphere, so it runs as soon as they are
   parsed, about 1.5 s before the page's 6 MB of scripts have run. No plotly.js, no Dash.

   Map: a click asks the server for the nearest shown point within 5 px (GET .../map/nearest, as
   the interactive plot does), rings it and names it; hovering the image asks what the pixel
   holds (GET .../map/pixel). Sphere: a click or hover picks the nearest drawn dot within 5 px
   (its molecule id travels with the dots). Dash also loads this file as an asset, for the
   interactive map's share of it (window.orientscopeMap).

   The choice is handed to Dash through the page URL (?molecule=), which Dash reads when it
   starts: the layout request's Referer carries it (app/initial_view.py). A choice made after
   Dash has asked for its layout goes to the page's "selected" store once the page is rendered. */
(function (host) {
  "use strict";
  // What a pixel of the server's map holds (GET .../map/pixel) in words: count, dominant category or
  // mean. Shared with the interactive map (orientscope.js), which loads this file as an asset.
  function describePixel(info) {
    if (!info || !info.count) { return ""; }
    var parts = [info.count + (info.count === 1 ? " point" : " points")];
    if (info.dominant) { parts.push("mostly " + info.dominant); }
    if (info.mean !== undefined && info.mean !== null) { parts.push("mean " + Number(info.mean).toPrecision(4)); }
    if (info.ratio !== undefined && info.ratio !== null) { parts.push(Number(info.ratio).toFixed(2) + "× uniform"); }
    if (info.matches) { parts.push(info.matches + " SMARTS " + (info.matches === 1 ? "match" : "matches")); }
    return parts.join(" · ");
  }

  window.orientscopeMap = { describePixel: describePixel };
  if (!host || !host.hasAttribute("data-map")) { return; }  // loaded as an asset: nothing to paint
  var SVG_NS = "http://www.w3.org/2000/svg";
  var PICK_PX = 5;  // as the server's nearest point (backend/services/map_raster.py)
  var RING_PX = 9;  // the interactive map's selection ring (orientscope.js RING_RADIUS)
  var HOVER_MS = 120;
  var cfg = JSON.parse(host.getAttribute("data-map"));
  var svg = host.querySelector("svg");
  var hint = host.querySelector(".map-hint");
  var vb = svg.viewBox.baseVal;  // in map units, SVG y down
  var tip = document.createElement("div");
  tip.className = "map-tooltip";
  tip.hidden = true;
  host.appendChild(tip);

  function restUrl(path, params) {
    var q = Object.keys(params).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]);
    }).join("&");
    return "/api/datasets/" + encodeURIComponent(cfg.dataset) + "/" + path + (q ? "?" + q : "");
  }

  function getJson(url) {
    return fetch(url).then(function (r) { return r.ok ? r.json() : null; }).catch(function () { return null; });
  }

  // The SVG point (viewBox units) under a mouse event, its pixel offset in the host, and the
  // viewBox units per screen pixel; null outside the drawing.
  function svgPoint(ev) {
    var box = svg.getBoundingClientRect(), hostBox = host.getBoundingClientRect();
    var fx = (ev.clientX - box.left) / box.width, fy = (ev.clientY - box.top) / box.height;
    if (!(fx >= 0 && fx <= 1 && fy >= 0 && fy <= 1)) { return null; }
    return { x: vb.x + fx * vb.width, y: vb.y + fy * vb.height, unit: vb.width / box.width,
             px: ev.clientX - hostBox.left, py: ev.clientY - hostBox.top, width: box.width, height: box.height };
  }

  function say(text) { if (hint) { hint.textContent = text || ""; } }

  function showTip(p, text) {
    tip.textContent = text;
    tip.hidden = !text;
    tip.style.left = (p.px + 12) + "px";
    tip.style.top = (p.py + 12) + "px";
  }

  function ring(x, y, unit) {
    var old = svg.querySelector(".first-paint-ring");
    if (old) { old.remove(); }
    var c = document.createElementNS(SVG_NS, "circle");
    c.setAttribute("class", "first-paint-ring");
    c.setAttribute("cx", x); c.setAttribute("cy", y); c.setAttribute("r", RING_PX * unit);
    c.setAttribute("fill", "none"); c.setAttribute("stroke", "#000"); c.setAttribute("stroke-width", 3 * unit);
    svg.appendChild(c);
  }

  // Hand the chosen molecule to Dash (see the top of this file).
  function choose(id) {
    var url = new URL(window.location.href);
    url.searchParams.set("molecule", id);
    window.history.replaceState(window.history.state, "", url.pathname + url.search + url.hash);
    // Dash's renderer (`var renderer = new DashRenderer()`, Dash's default `app.renderer`, the page's
    // last script) asks for the layout: until it has run, the URL is enough. After that the layout may
    // be on its way without the molecule, and dcc.Location keeps the layout's URL: once the page is
    // rendered, put the molecule in the store its panel reads.
    if (typeof window.renderer === "undefined" && document.readyState === "loading") { return; }
    (function handOver(tries) {
      var panel = document.getElementById("molecule-id");
      var clientside = window.dash_clientside;
      if (!panel || !(clientside && clientside.set_props)) {
        if (tries > 0) { setTimeout(function () { handOver(tries - 1); }, 50); }
        return;
      }
      if (panel.textContent !== id) { clientside.set_props("selected", { data: id }); }
    })(600);
  }

  // A chosen molecule: ringed at (x, y) in viewBox units and named at once, opened by Dash.
  function chosen(ev, id, x, y, unit) {
    ring(x, y, unit);
    host.dataset.clicked = id;
    say("Molecule " + id + " — opening…");
    choose(id);
    requestAnimationFrame(function () {  // the frame with the ring: how long the click took to answer
      performance.measure("orientscope:first-paint-click", { start: ev.timeStamp, end: performance.now() });
    });
    getJson("/api/datasets/" + encodeURIComponent(cfg.dataset) + "/molecules/" + encodeURIComponent(id))
      .then(function (m) {
        if (m && host.dataset.clicked === id) {
          say("Molecule " + id + " · " + m.formula + (m.smiles ? " · " + m.smiles : "") + " — opening…");
        }
      });
  }

  function nothingNear() {
    host.dataset.clicked = "none";
    say("No molecule within 5 px of that click; click closer to a point.");
  }

  // ---------------------------------------------------------------- the map's image
  function mapPick(ev) {
    var p = svgPoint(ev);
    if (!p) { return; }
    var s = cfg.scale;  // map units per Mollweide unit
    var vp = { x0: vb.x / s, x1: (vb.x + vb.width) / s, y0: -(vb.y + vb.height) / s, y1: -vb.y / s,
               width: Math.max(1, Math.round(p.width)), height: Math.max(1, Math.round(p.height)) };
    host.dataset.clicked = "";
    getJson(restUrl("map/nearest", Object.assign({ x: p.x / s, y: -p.y / s }, cfg.query, vp))).then(function (hit) {
      if (!hit) { return; }
      if (hit.id === null) { nothingNear(); return; }
      chosen(ev, hit.id, hit.x * s, -hit.y * s, p.unit);
    });
  }

  var hoverTimer = null, hoverAsked = 0;
  function mapHover(ev) {
    var p = svgPoint(ev);
    clearTimeout(hoverTimer);
    if (!p) { tip.hidden = true; return; }
    hoverTimer = setTimeout(function () {
      var asked = ++hoverAsked, s = cfg.scale;
      var params = Object.assign({ x: p.x / s, y: -p.y / s, kind: cfg.kind }, cfg.query, cfg.viewport);
      getJson(restUrl("map/pixel", params)).then(function (info) {
        if (asked === hoverAsked) { showTip(p, describePixel(info)); }
      });
    }, HOVER_MS);
  }

  // ---------------------------------------------------------------- the sphere's dots
  var dots = null;
  function nearestDot(p) {
    if (!dots) {
      var ids = cfg.ids || [];
      dots = Array.prototype.map.call(svg.querySelectorAll("g.dots circle"), function (c, k) {
        return { x: Number(c.getAttribute("cx")), y: Number(c.getAttribute("cy")), id: ids[k] };
      });
    }
    var best = null, bestD = PICK_PX * p.unit;
    dots.forEach(function (d) {  // later dots are drawn on top: they win a tie
      var dist = Math.hypot(d.x - p.x, d.y - p.y);
      if (dist <= bestD) { best = d; bestD = dist; }
    });
    return best;
  }

  function spherePick(ev) {
    var p = svgPoint(ev), d = p && nearestDot(p);
    if (!p) { return; }
    if (!d) { nothingNear(); return; }
    chosen(ev, d.id, d.x, d.y, p.unit);
  }

  function sphereHover(ev) {
    var p = svgPoint(ev), d = p && nearestDot(p);
    if (!d) { tip.hidden = true; return; }
    showTip(p, "molecule " + d.id);
  }

  var sphere = cfg.view === "sphere";
  svg.style.cursor = "crosshair";
  svg.addEventListener("click", sphere ? spherePick : mapPick);
  svg.addEventListener("mousemove", sphere ? sphereHover : mapHover);
  svg.addEventListener("mouseleave", function () { clearTimeout(hoverTimer); hoverAsked++; tip.hidden = true; });
})(document.currentScript && document.currentScript.parentNode);
