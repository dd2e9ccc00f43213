// "Clear selection" (app/selection_panel.py) also takes the drawn outline off the map. The selection's URL form
// (sel=, backend/core/selection.py) is map_draw.js's (window.orientscopeMap.draw.selectionText / selectionVertices),
// which the page's first paint uses too.
(function () {
  document.addEventListener("click", function (ev) {
    if (!ev.target || ev.target.id !== "selection-clear") { return; }
    var host = document.getElementById("orientation-map");
    if (host && host._mapHandle) { host._mapHandle.showSelection(null); }
  });
})();
