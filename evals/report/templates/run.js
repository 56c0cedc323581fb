(function () {
  var state = 'all', text = '';
  function apply() {
    document.querySelectorAll('details.task').forEach(function (el) {
      var okStatus = state === 'all' || el.dataset.status === state;
      var okText = !text || el.dataset.search.indexOf(text) >= 0;
      el.style.display = okStatus && okText ? '' : 'none';
    });
  }
  document.querySelectorAll('.filters button').forEach(function (b) {
    b.addEventListener('click', function () {
      document.querySelectorAll('.filters button').forEach(function (o) {
        o.classList.remove('on'); });
      b.classList.add('on'); state = b.dataset.status; apply();
    });
  });
  function openHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (el && el.tagName === 'DETAILS') { el.open = true; el.scrollIntoView({block: 'nearest'}); }
  }
  window.addEventListener('hashchange', openHash); openHash();
  var box = document.getElementById('q');
  if (box) { box.addEventListener('input', function () {
    text = box.value.toLowerCase(); apply(); }); }
})();
