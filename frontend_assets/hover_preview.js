/* The map's hover preview: after a moment's rest on a point or pixel, a small card beside the cursor
   with the 2D depiction of the molecule the hover names (GET .../molecules/{id}/depiction.svg, drawn by
   RDKit on the server), its id and formula, and the value the map's colour shows for it
   (GET .../map/molecules/{id} with the map's query). It is a DOM overlay above the plot, not a change
   of the figure, and it never takes the mouse (pointer-events: none), so hover and click below it
   behave as without it.

   Callers name the molecule (one pick rule: the one their hover text names) and where the cursor is:
   map_component.js for the flat map, the density view and the scatter view, on the first paint and in Dash
   alike; orientscope.js and first_paint.js for their sphere. app/first_paint.py inlines this script before
   both. The flat map's hovers ask
   GET .../map/preview, whose one answer names the molecule and carries its card (showAnswer): one
   round trip after the rest instead of two. */
(function () {
  "use strict";
  if (window.orientscopePreview) { return; }  // inlined in the first paint and loaded again by Dash
  var GAP_PX = 16;  // from the cursor to the card, clear of the hover text at +12 px
  var CARD_PX = { width: 200, height: 200 };  // style.css .hover-preview, for keeping it inside the host

  // first_paint.js's (loaded with this script on every page): asked at hover time, once both have run
  function url(dataset, path, query) { return window.orientscopeMap.rest.url(dataset, path, query); }

  function cardOf(host) {
    var card = host.querySelector(":scope > .hover-preview");
    if (!card) {
      card = document.createElement("div");
      card.className = "hover-preview";
      card.hidden = true;
      card._seq = 0;
      host.appendChild(card);
    }
    return card;
  }

  // The caption's words: the id, the formula, and the colour's value at the described point (e.g. "axis 2 ·
  // zpve (Ha): 0.1241"), as the server writes it (value_text); that point's axis unless the value names it.
  function caption(id, info) {
    if (!info) { return "molecule " + id; }
    var words = ["molecule " + info.id];
    if (info.formula) { words.push(info.formula); }
    var line = document.createElement("div");
    line.textContent = words.join(" · ");
    var value = document.createElement("div");
    value.className = "hover-preview-value";
    value.textContent = (info.axis && info.color !== "axis" ? "axis " + info.axis + " · " : "") +
      (info.color || "colour") + ": " + info.value_text;
    return [line, value];
  }

  // The card's image of molecule `id` from `src`, and the promise that it decoded (false: it cannot be drawn).
  function picture(id, src) {
    var img = new Image();
    img.alt = "2D depiction of molecule " + id;
    img.src = src;
    var drawn = (img.decode ? img.decode() : Promise.resolve()).then(function () { return true; },
                                                                        function () { return false; });
    return { img: img, drawn: drawn };
  }

  // Show molecule `id` of `dataset` with the cursor at `at` = {left, top} in `host`'s pixels; `query` is
  // the map's REST query (its colour). The card is filled in only once both answers are in, and only if
  // no later hover asked for another one.
  function show(host, at, dataset, id, query) {
    var card = cardOf(host), seq = ++card._seq;
    var pic = picture(id, url(dataset, "molecules/" + encodeURIComponent(id) + "/depiction.svg"));
    var info = fetch(url(dataset, "map/molecules/" + encodeURIComponent(id), query))
      .then(function (r) { return r.ok ? r.json() : null; }).catch(function () { return null; });
    return fill(host, card, seq, at, id, pic, info);
  }

  // The same card from an answer that carries it (GET .../map/preview: {id, caption, depiction}), with no
  // request of its own.
  function showAnswer(host, at, answer) {
    var card = cardOf(host), seq = ++card._seq;
    var pic = picture(answer.id, "data:image/svg+xml;charset=utf-8," + encodeURIComponent(answer.depiction || ""));
    return fill(host, card, seq, at, answer.id, pic, answer.caption);
  }

  // Fill and place the card once the picture has decoded and the caption `info` (or its promise) is in.
  function fill(host, card, seq, at, id, pic, info) {
    var img = pic.img;
    return Promise.all([pic.drawn, info]).then(function (answers) {
      if (seq !== card._seq) { return; }  // a later hover took over, or the cursor left
      card.innerHTML = "";
      if (answers[0]) { card.appendChild(img); }
      var text = document.createElement("div");
      text.className = "hover-preview-caption";
      [].concat(caption(id, answers[1])).forEach(function (part) {
        text.append(part);
      });
      card.appendChild(text);
      var width = host.clientWidth || 0;
      var left = at.left + GAP_PX + CARD_PX.width > width ? at.left - GAP_PX - CARD_PX.width : at.left + GAP_PX;
      card.style.left = Math.max(0, left) + "px";
      card.style.top = (at.top + GAP_PX + 20) + "px";
      card.dataset.molecule = id;
      card.dataset.axis = (answers[1] && answers[1].axis) || "";
      card.hidden = false;
    });
  }

  function hide(host) {
    var card = host && host.querySelector(":scope > .hover-preview");
    if (!card) { return; }
    card._seq++;
    card.hidden = true;
    card.dataset.molecule = "";
    card.dataset.axis = "";
  }

  window.orientscopePreview = { show: show, showAnswer: showAnswer, hide: hide };
})();
