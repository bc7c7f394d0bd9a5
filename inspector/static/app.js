// Hovering a round in the list highlights its route on the map (the map's routes carry data-label="round N").
document.querySelectorAll(".round").forEach(function (item) {
  var route = document.querySelector('.world-map g.route[data-label="round ' + item.dataset.round + '"]');
  if (!route) return;
  item.addEventListener("mouseenter", function () { route.classList.add("highlight"); });
  item.addEventListener("mouseleave", function () { route.classList.remove("highlight"); });
});
