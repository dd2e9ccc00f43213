// The scatter view (a property against an axis coordinate, app/scatter_panel.py): its controls show in
// that view only.
(function () {
  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    scatter: {
      showControls: function (view) { return view !== "scatter"; }
    }
  });
})();
