/* The pinned comparison: up to four molecules side by side in the strip under the map (app/pins.py),
   each in one 3Dmol.js viewer that switches between its stored and its canonical pose.

   The pins live in the "pins" store as "id1,id2,..." (the URL's `pins`, app/state.py), so a link, a
   reload and the back button bring them back. A pin's viewer is drawn from the molecule panel's own
   viewer spec (GET /_first-paint/molecule-panel, app/viewer.py: the stored and the canonical pose), one
   pose at a time, by the same drawing code as the molecule viewer (first_paint.js, orientscopeMap.viewer).
   Cards of molecules still pinned are kept when the pins change, with their WebGL context. */
(function () {
  "use strict";
  var MAX_PINS = 4;  // app/state.py MAX_PINS
  var PANEL_PATH = "/_first-paint/molecule-panel";
  var POSES = ["stored", "canonical"];  // the order of the spec's scenes (app/viewer.py molecule_scenes)

  function split(text) {
    return (text || "").split(",").map(function (s) { return s.trim(); }).filter(Boolean);
  }

  function setPins(ids) {
    window.dash_clientside.set_props("pins", { data: ids.length ? ids.join(",") : null });
  }

  // The "Pin" button of the molecule panel: [the new pins, the message under the button].
  function pin(nClicks, selected, pins) {
    var nu = window.dash_clientside.no_update;
    if (!nClicks) { return [nu, nu]; }
    var ids = split(pins);
    if (!selected) { return [nu, "Open a molecule first: click it on the map."]; }
    if (ids.indexOf(String(selected)) >= 0) { return [nu, "Molecule " + selected + " is pinned already."]; }
    if (ids.length >= MAX_PINS) {
      return [nu, "At most " + MAX_PINS + " molecules can be pinned: unpin one to pin molecule " + selected + "."];
    }
    return [ids.concat([String(selected)]).join(","), ""];
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

  function newCard(dataset, id) {
    var card = document.createElement("div");
    card.className = "pin-card";
    card.dataset.molecule = id;
    card.dataset.dataset = dataset;
    card.dataset.pose = "stored";
    var head = document.createElement("div");
    head.className = "pin-head";
    var name = document.createElement("span");
    name.className = "pin-name";
    name.textContent = "molecule " + id;
    var toggle = button("show canonical pose", "pin-pose", "switch between the stored and the canonical pose",
                        function () {
                          card.dataset.pose = card.dataset.pose === "stored" ? "canonical" : "stored";
                          drawPose(card);
                        });
    var unpin = button("×", "pin-remove", "unpin molecule " + id, function () {
      setPins(split(card.parentNode && card.parentNode.dataset.pins).filter(function (p) { return p !== id; }));
    });
    head.append(name, toggle, unpin);
    var viewerEl = document.createElement("div");
    viewerEl.className = "viewer pin-viewer";
    card.append(head, viewerEl);
    var url = PANEL_PATH + "?dataset=" + encodeURIComponent(dataset) + "&molecule=" + encodeURIComponent(id);
    fetch(url).then(function (r) { return r.ok ? r.json() : null; }).catch(function () { return null; })
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
    var dataset = mapState && mapState.dataset, ids = dataset ? split(pins).slice(0, MAX_PINS) : [];
    var kept = {};
    Array.prototype.forEach.call(strip.querySelectorAll(".pin-card"), function (card) {
      if (card.dataset.dataset === dataset && ids.indexOf(card.dataset.molecule) >= 0) {
        kept[card.dataset.molecule] = card;
      } else {
        card.remove();
      }
    });
    ids.forEach(function (id) { strip.appendChild(kept[id] || newCard(dataset, id)); });  // in pinning order
    strip.hidden = !ids.length;
    strip.dataset.pins = ids.join(",");
    return ids.join(",");
  }

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    pins: { pin: pin, renderPins: renderPins }
  });
})();
