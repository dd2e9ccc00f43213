/* The pinned comparison: up to four molecules side by side in the strip under the map (app/pins.py),
   each in one 3Dmol.js viewer that switches between its stored and its canonical pose.

   The pins live in the "pins" store as "id1,id2:c,..." (the URL's `pins`, backend/figures/state.py: ":c" a pin shown
   in its canonical pose, a plain id or ":s" in its stored pose), so a link, a reload and the back button
   bring them back, each in its pose. A pin's viewer is drawn from the molecule panel's own
   viewer spec (GET /api/datasets/{id}/map/panel/{mol_id}, backend/figures/viewer.py: the stored and the canonical pose), one
   pose at a time, by the same drawing code as the molecule viewer (first_paint.js, orientscopeMap.viewer).
   Cards of molecules still pinned are kept when the pins change, with their WebGL context. */
(function () {
  "use strict";
  var MAX_PINS = 4;  // backend/figures/state.py MAX_PINS
  var POSES = ["stored", "canonical"];  // the order of the spec's scenes (backend/figures/viewer.py molecule_scenes)
  var SUFFIX = { s: "stored", c: "canonical" };  // backend/figures/state.py PIN_POSES

  // [{id, pose}] of a pins value, a molecule's first pin only (backend/figures/state.py split_pins and pin_entry).
  function parse(text) {
    var seen = {}, out = [];
    (text || "").split(",").forEach(function (part) {
      part = part.trim();
      if (!part) { return; }
      var at = part.lastIndexOf(":"), tail = at > 0 ? part.slice(at + 1) : "";
      var pin = SUFFIX[tail] ? { id: part.slice(0, at), pose: SUFFIX[tail] } : { id: part, pose: "stored" };
      if (!seen[pin.id]) { seen[pin.id] = true; out.push(pin); }
    });
    return out;
  }

  // The pins value of [{id, pose}] (backend/figures/state.py pin_text): ":c" for the canonical pose, and ":s" only for an
  // id that itself ends as a pose would.
  function format(pins) {
    return pins.map(function (p) {
      if (p.pose === "canonical") { return p.id + ":c"; }
      return parse(p.id)[0].id !== p.id ? p.id + ":s" : p.id;
    }).join(",");
  }

  function setPins(pins) {
    window.dash_clientside.set_props("pins", { data: pins.length ? format(pins) : null });
  }

  function ids(pins) { return pins.map(function (p) { return p.id; }); }

  // The "Pin" button of the molecule panel: [the new pins, the message under the button].
  function pin(nClicks, selected, pins) {
    var nu = window.dash_clientside.no_update;
    if (!nClicks) { return [nu, nu]; }
    var pinned = parse(pins);
    if (!selected) { return [nu, "Open a molecule first: click it on the map."]; }
    if (ids(pinned).indexOf(String(selected)) >= 0) { return [nu, "Molecule " + selected + " is pinned already."]; }
    if (pinned.length >= MAX_PINS) {
      return [nu, "At most " + MAX_PINS + " molecules can be pinned: unpin one to pin molecule " + selected + "."];
    }
    return [format(pinned.concat([{ id: String(selected), pose: "stored" }])), ""];
  }

  function button(label, className, title, onClick) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = className;
    b.textContent = label;
    b.title = title;
    b.addEventListener("click", onClick);
    return b;
  }

  // Draws the card's molecule in its current pose (the spec's scene of that pose alone).
  function drawPose(card) {
    var spec = card._spec, viewerEl = card.querySelector(".pin-viewer");
    var scene = spec && spec.scenes && spec.scenes[POSES.indexOf(card.dataset.pose)];
    var toggle = card.querySelector(".pin-pose");
    toggle.textContent = card.dataset.pose === "stored" ? "show canonical pose" : "show stored pose";
    if (!scene) { return Promise.resolve(); }
    var one = { molecule: spec.molecule, rows: 1, cols: 1, linked: false, scenes: [scene] };
    var code = window.orientscopeMap.viewer;
    return code.load().then(function () {
      if (!card.isConnected) { return; }
      code.draw(viewerEl, one);
      viewerEl.dataset.pose = card.dataset.pose;
    }, function () { viewerEl.textContent = "3Dmol.js did not load"; });
  }

  // The strip's pins with the card of molecule ``id`` changed by ``change(pin)`` (or left out if it answers null).
  function changed(card, change) {
    var strip = card.parentNode;
    return parse(strip && strip.dataset.pins).map(function (p) {
      return p.id === card.dataset.molecule ? change(p) : p;
    }).filter(Boolean);
  }

  function newCard(dataset, id, pose) {
    var card = document.createElement("div");
    card.className = "pin-card";
    card.dataset.molecule = id;
    card.dataset.dataset = dataset;
    card.dataset.pose = pose;
    var head = document.createElement("div");
    head.className = "pin-head";
    var name = document.createElement("span");
    name.className = "pin-name";
    name.textContent = "molecule " + id;
    var toggle = button("show canonical pose", "pin-pose", "switch between the stored and the canonical pose",
                        function () {  // through the pins (and so the URL): renderPins redraws it
                          var pose = card.dataset.pose === "stored" ? "canonical" : "stored";
                          setPins(changed(card, function (p) { return { id: p.id, pose: pose }; }));
                        });
    var unpin = button("×", "pin-remove", "unpin molecule " + id, function () {
      setPins(changed(card, function () { return null; }));
    });
    head.append(name, toggle, unpin);
    var viewerEl = document.createElement("div");
    viewerEl.className = "viewer pin-viewer";
    card.append(head, viewerEl);
    var rest = window.orientscopeMap.rest;
    rest.getJson(rest.panelUrl(dataset, id)).catch(function () { return null; })
      .then(function (panel) {
        if (!panel || !panel.viewer) {
          viewerEl.textContent = "No molecule " + id + " in dataset " + dataset + ".";
          card.dataset.missing = "1";
          return;
        }
        card._spec = panel.viewer;
        drawPose(card);
      });
    return card;
  }

  // The strip shows the pins of the page's dataset, in pinning order.
  function renderPins(pins, mapState, stripId) {
    var strip = document.getElementById(stripId);
    if (!strip) { return window.dash_clientside.no_update; }
    var dataset = mapState && mapState.dataset, shown = dataset ? parse(pins).slice(0, MAX_PINS) : [];
    var kept = {};
    Array.prototype.forEach.call(strip.querySelectorAll(".pin-card"), function (card) {
      if (card.dataset.dataset === dataset && ids(shown).indexOf(card.dataset.molecule) >= 0) {
        kept[card.dataset.molecule] = card;
      } else {
        card.remove();
      }
    });
    shown.forEach(function (p) {  // in pinning order; a kept card in its pose of the pins (a toggle, the back button)
      var card = kept[p.id];
      if (!card) {
        card = newCard(dataset, p.id, p.pose);
      } else if (card.dataset.pose !== p.pose) {
        card.dataset.pose = p.pose;
        drawPose(card);
      }
      strip.appendChild(card);
    });
    strip.hidden = !shown.length;
    strip.dataset.pins = format(shown);
    return strip.dataset.pins;
  }

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    pins: { pin: pin, renderPins: renderPins }
  });
})();
