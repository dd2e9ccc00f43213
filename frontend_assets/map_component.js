/* The map's interaction, written once: map_draw.js's drawings of the plane views (the page's first paint, inlined
   by app/first_paint.py, and Dash's page alike), and the scatter view's plotly.js
   graph (scatter.js). It owns the
   click's pick (press, release, GET .../map/nearest, the "nothing near" hint, the chooser of a shared pixel),
   the hover (GET .../map/preview after a rest: the tooltip and the card), the selection ring, and the density
   view's cell words with the linked label on the other map.

   Each caller hands it a surface, an adapter over its drawing:
     {host: the element the overlays go in (position: relative),
      toMap(ev) -> {x, y (Mollweide units), px, py (the host's pixels)} or null outside the map,
      grid() -> the pixel grid a pick counts on ({x0, x1, y0, y1, width, height}),
      toPixel(x, y) -> {px, py} in the host's pixels, or null outside the drawn region,
      source() -> {dataset, query (the map's REST query), kind (map/preview's, or null),
                   routes ("map", or "scatter" for the scatter view's own pick: scatter/nearest, ...)}}.
   The scatter view (scatter.js) uses the click and the hover too, in its plot's units.
   map_draw.js builds it from its SVG viewBox (svgSurface), scatter.js from the plotly axes (orientscope.js
   plotSurface, on plotlyInternals, the only reader of plotly.js internals). */
(function () {
  "use strict";
  var shared = window.orientscopeMap = window.orientscopeMap || {};
  if (shared.component) { return; }  // inlined in the first paint and loaded again by Dash
  var MAP_SCALE = 10000;  // map units per Mollweide unit (backend/figures/plots.py MAP_SCALE): the cells' units
  var HOVER_MS = 120;  // a rest, not a sweep across the map, asks the server
  var CLICK_SLOP_PX = 4;  // a release farther from its press is the end of a pan or a box, not a click
  var RING_PX = 9;
  var SVG_NS = "http://www.w3.org/2000/svg";

  // first_paint.js's shared REST spelling (window.orientscopeMap.rest), read when called: both scripts have run
  function rest() { return window.orientscopeMap.rest; }
  function getJson(url) { return rest().getJson(url).catch(function () { return null; }); }
  // The pick's routes of each family (api/routes/orientation_map.py, api/routes/scatter.py)
  var ROUTES = {
    map: { nearest: "map/nearest", preview: "map/preview", shared: "map/shared" },
    scatter: { nearest: "scatter/nearest", preview: "scatter/preview", shared: "scatter/shared" }
  };
  function mapUrl(src, name, params) {
    return rest().url(src.dataset, ROUTES[src.routes || "map"][name], Object.assign({}, src.query, params));
  }

  // The query of a pick at a mouse event: the point under it and the pixel grid, the same for a hover and a click,
  // so that both name the same molecule (backend/services/map_pick.py). Null outside the map.
  function pickQuery(surface, ev) {
    var p = surface.toMap(ev), grid = p && surface.grid();
    return p && grid ? { p: p, params: Object.assign({ x: p.x, y: p.y }, grid) } : null;
  }

  // ---------------------------------------------------------------- the chooser of a shared pixel
  // Several molecules share the clicked point's pixel: a paged list (id, formula, the coloured value) lets the
  // user choose one (the picker's, below): `o` = {total, at: {left, top} in the host's pixels, page(offset, limit):
  // the promise of a page ({color, molecules: [{id, formula, value, value_text}]}), choose(id)}.
  var CHOOSER_PAGE = 10;

  function closeChooser(host) {
    var old = host && host.querySelector(":scope > .map-chooser");
    if (old) { old.remove(); }
  }

  function chooserCell(tr, text) {
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

  function openChooser(host, o) {
    closeChooser(host);
    var box = document.createElement("div");
    box.className = "map-chooser";
    box.setAttribute("role", "dialog");
    box.dataset.total = o.total;
    box.style.left = Math.max(0, o.at.left - 140) + "px";
    box.style.top = (o.at.top + 12) + "px";
    ["mousedown", "click", "mousemove"].forEach(function (t) {  // not a click or hover on the map below
      box.addEventListener(t, function (e) { e.stopPropagation(); });
    });
    var title = document.createElement("p");
    title.textContent = o.total + " molecules share this pixel: choose one";
    var close = chooserButton("×", "close", function () { closeChooser(host); });
    close.className = "chooser-close";
    var table = document.createElement("table");
    var pager = document.createElement("div");
    pager.className = "chooser-pager";
    box.append(close, title, table, pager);
    host.appendChild(box);
    var pages = Math.ceil(o.total / CHOOSER_PAGE);
    function show(page) {
      o.page(page * CHOOSER_PAGE, CHOOSER_PAGE).then(function (answer) {
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
          chooserCell(tr, "").appendChild(chooserButton(m.id, "open molecule " + m.id, function () {
            closeChooser(host);
            o.choose(m.id);
          }));
          chooserCell(tr, m.formula);
          chooserCell(tr, m.value_text);
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
      }, function () {});
    }
    show(0);
    return box;
  }

  // ---------------------------------------------------------------- the click
  // The press asks for the nearest shown point within 5 px (map/nearest) and, for a lone molecule, its panel
  // (map/panel/{id}: id, info, viewer spec), so that the release has them at once. `o`:
  //   enabled() -> whether this drawing picks on the server now,
  //   choose(id, hit, panel, ev, current) -> open it (panel: the route's answer, or null; current(): whether no
  //     later click took over since),
  //   say(text) -> the hint under the map, zoomable: whether the hint may suggest zooming in,
  //   panel: false -> no panel asked for (choose gets null; the scatter view hands its molecule to Dash alone).
  // Returns {press(ev), click(ev)}, for the caller's own listeners (the Dash map's press also starts a box).
  function picker(surface, o) {
    var pending = null, seq = 0;
    function panelOf(src, id) {
      return o.panel === false ? Promise.resolve(null) : getJson(rest().panelUrl(src.dataset, id));
    }
    function press(ev) {
      pending = null;
      if (ev.button !== 0 || (o.enabled && !o.enabled())) { return; }
      var q = pickQuery(surface, ev), src = q && surface.source();
      if (!q) { return; }
      var answer = getJson(mapUrl(src, "nearest", q.params)).then(function (hit) {
        if (!hit || hit.id === null || hit.shared > 1) { return { hit: hit, panel: null }; }
        return panelOf(src, hit.id).then(function (panel) { return { hit: hit, panel: panel }; });
      });
      pending = { x: ev.clientX, y: ev.clientY, answer: answer, q: q, src: src };
    }
    function click(ev) {
      var pick = pending;
      pending = null;  // one pick per press: plotly.js follows a release with a click event of its own
      if (!pick || Math.abs(pick.x - ev.clientX) + Math.abs(pick.y - ev.clientY) > CLICK_SLOP_PX) { return; }
      var mine = ++seq, host = surface.host;
      function current() { return mine === seq; }
      host.dataset.clicked = "";
      closeChooser(host);
      pick.answer.then(function (a) {
        if (!current() || !a.hit) { return; }  // a later click took over, or the server said no
        var hit = a.hit;
        if (hit.id === null) {
          host.dataset.clicked = "none";
          o.say("No molecule within 5 px of that click; click closer to a point" + (o.zoomable ? " or zoom in." : "."));
          return;
        }
        if (hit.shared > 1) {  // several molecules share its pixel: the user chooses
          openChooser(host, {
            total: hit.shared, at: { left: pick.q.p.px, top: pick.q.p.py },
            page: function (offset, limit) {
              return getJson(mapUrl(pick.src, "shared", Object.assign({ offset: offset, limit: limit }, pick.q.params)));
            },
            choose: function (id) {
              panelOf(pick.src, id).then(function (panel) {
                host.dataset.clicked = id;
                o.choose(id, hit, panel, ev, current);
              });
            }
          });
          return;
        }
        host.dataset.clicked = hit.id;
        o.choose(hit.id, hit, a.panel, ev, current);
      });
    }
    return { press: press, click: click };
  }

  // ---------------------------------------------------------------- the tooltip and the card
  function tooltipOf(host) {
    var tip = host.querySelector(":scope > .map-tooltip");
    if (!tip) {
      tip = document.createElement("div");
      tip.className = "map-tooltip";
      tip.hidden = true;
      host.appendChild(tip);
    }
    return tip;
  }

  // Words beside host pixel p (none: hidden). Its data attributes name what it describes, for tests: the
  // molecule, its axis, how many share its pixel and its pixel's count (a map/preview answer's), or the kind.
  function showTip(host, p, text, hit, kind) {
    var tip = tooltipOf(host), pixel = (hit && hit.pixel) || {};
    tip.textContent = text || "";
    tip.hidden = !text;
    tip.dataset.kind = kind || "";
    tip.dataset.molecule = (hit && hit.id) || "";
    tip.dataset.axis = (hit && hit.axis) || "";
    tip.dataset.shared = (hit && hit.shared) || "";
    tip.dataset.points = pixel.count || "";
    if (p) {
      tip.style.left = (p.px + 12) + "px";
      tip.style.top = (p.py + 12) + "px";
    }
  }

  // The hover preview's card (hover_preview.js) of a map/preview answer, or of molecule `id` with `query`
  // (the sphere's dots); none near: no card.
  function showCard(host, p, answer, id, src) {
    var card = window.orientscopePreview;
    if (!card) { return; }
    var named = answer ? answer.id : id;
    if (!p || named === null || named === undefined) { card.hide(host); return; }
    if (answer) { card.showAnswer(host, { left: p.px, top: p.py }, answer); return; }
    card.show(host, { left: p.px, top: p.py }, src.dataset, id, src.query || {});
  }

  function hide(host) {
    if (!host) { return; }
    tooltipOf(host).hidden = true;
    if (window.orientscopePreview) { window.orientscopePreview.hide(host); }
  }

  // ---------------------------------------------------------------- the density view's cells
  // The words of the cell holding Mollweide (x, y) of a cells grid {x0, dx, nx, y0, dy, ny, z} (map units, z
  // row-major from the bottom row, null where there is no density), as the heatmap's hover once said it
  // (backend/figures/plots.py density_map_figure): "density 1.23× uniform"; "" outside the cells.
  function densityText(grid, x, y) {
    if (!grid) { return ""; }
    var i = Math.floor((x * MAP_SCALE - grid.x0) / grid.dx), j = Math.floor((y * MAP_SCALE - grid.y0) / grid.dy);
    if (!(i >= 0 && j >= 0 && i < grid.nx && j < grid.ny)) { return ""; }
    var z = grid.z[j * grid.nx + i];
    return z === null || z === undefined || z !== z ? "" : "density " + Number(z).toFixed(2) + "× uniform";
  }

  // ---------------------------------------------------------------- the hover
  // After a rest (HOVER_MS) one request, map/preview, names the molecule a click there opens, with its card,
  // its pixel and the words; only the newest hover's answer is shown. On a density map the words are the
  // cell's density instead, at once, and the other map (`o.other()`: {surface, cells}) names its own cell at
  // the same place on the sky, so that the two are read side by side. `o.cells()`: this map's cells grid,
  // or null when it is not a density map. Returns {move(ev), leave()}.
  function hover(surface, o) {
    var timer = null, asked = 0;
    function host() { return surface.host; }  // read when used: a drawing can move to another page element
    function link(p) {
      var other = o.other && o.other();
      if (!other) { return; }
      var at = p && other.surface.toPixel(p.x, p.y), text = at ? densityText(other.cells, p.x, p.y) : "";
      showTip(other.surface.host, at, text, null, "density");
    }
    function leave() {
      clearTimeout(timer);
      asked++;
      hide(host());
      link(null);
    }
    function move(ev) {
      var q = pickQuery(surface, ev), cells = o.cells ? o.cells() : null;
      clearTimeout(timer);
      if (cells) {
        showTip(host(), q && q.p, q ? densityText(cells, q.p.x, q.p.y) : "", null, "density");
        link(q && q.p);
      }
      if (!q) { leave(); return; }
      timer = setTimeout(function () {
        var mine = ++asked, src = surface.source();
        var params = Object.assign(src.kind ? { kind: src.kind } : {}, q.params);
        getJson(mapUrl(src, "preview", params)).then(function (hit) {
          if (mine !== asked) { return; }  // a later hover already asked, or the cursor left
          showCard(host(), q.p, hit);
          if (!cells) { showTip(host(), q.p, (hit && hit.text) || "", hit); }
        });
      }, HOVER_MS);
    }
    return { move: move, leave: leave };
  }

  // ---------------------------------------------------------------- the selection ring
  // The selected molecule's points ringed in an SVG overlay of the host ([{px, py} or null] in its pixels), not
  // a change of the drawing: a plotly.js figure change re-renders every WebGL point (about 1 s in software
  // WebGL). Returns how many are ringed.
  function ring(host, pixels) {
    var svg = host.querySelector(":scope > svg.selection-ring");
    if (!svg) {
      svg = document.createElementNS(SVG_NS, "svg");
      svg.setAttribute("class", "selection-ring");
      svg.setAttribute("style", "position:absolute;left:0;top:0;pointer-events:none;overflow:visible");
      host.appendChild(svg);
    }
    svg.setAttribute("width", host.clientWidth);
    svg.setAttribute("height", host.clientHeight);
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var shown = 0;
    pixels.forEach(function (at) {
      if (!at || !isFinite(at.px) || !isFinite(at.py)) { return; }  // an axis its symmetry leaves undefined
      var c = document.createElementNS(SVG_NS, "circle");
      c.setAttribute("cx", at.px); c.setAttribute("cy", at.py); c.setAttribute("r", RING_PX);
      c.setAttribute("fill", "none"); c.setAttribute("stroke", "#000000"); c.setAttribute("stroke-width", 3);
      svg.appendChild(c);
      shown += 1;
    });
    return shown;
  }

  // showTip, showCard and HOVER_MS also serve the sphere's own hover (first_paint.js, and Dash's sphere in
  // orientscope.js); hide puts a host's tooltip and card away (the sphere's leave, a region redrawn).
  shared.component = {
    picker: picker, hover: hover, ring: ring, showTip: showTip, showCard: showCard, hide: hide, HOVER_MS: HOVER_MS
  };
})();
