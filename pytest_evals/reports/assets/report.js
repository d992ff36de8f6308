/* pytest_evals: renders a case's detail when its row is open and on screen.
 *
 * The details live in #evals-case-data (JSON lines, or deflated + base64 for large
 * runs). Everything is written with text nodes (never innerHTML), so case data cannot
 * become markup. pytest-html re-renders its whole table on every toggle, sort or
 * filter; a new table is noticed and its open rows are filled as they scroll into view.
 */
(function () {
  'use strict'
  var store = document.getElementById('evals-case-data')
  if (!store) return

  // Runs before pytest-html's script (which sits at the end of the page): a <video>
  // in every row's template costs Chromium several times the rest of the row.
  if (store.getAttribute('data-strip-video') === '1') {
    var template = document.getElementById('template_results-table__tbody')
    var video = template && template.content.querySelector('video')
    if (video) video.remove()
  }

  // Cases without a row are not in pytest-html's counts: say where they are.
  var dropped = JSON.parse(store.getAttribute('data-dropped') || '{}')
  Object.keys(dropped).forEach(function (outcome) {
    var span = document.querySelector('.filters span.' + outcome)
    if (span && dropped[outcome] > 0) {
      var comma = /,\s*$/.test(span.textContent)
      var label = span.textContent.replace(/,\s*$/, '')
      var shown = parseInt(label, 10) || 0
      label = label.replace(/^\d+/, String(shown + dropped[outcome]))
      span.textContent = label + ' (' + dropped[outcome] + ' only in the case list)' + (comma ? ',' : '')
    }
  })
  var lines = null
  var failure = null

  function decode () {
    var encoding = store.getAttribute('data-encoding')
    var payload = store.textContent
    if (encoding !== 'deflate-base64') return Promise.resolve(payload)
    if (typeof DecompressionStream === 'undefined') {
      return Promise.reject(new Error('this browser cannot inflate the case details (no DecompressionStream)'))
    }
    var binary = atob(payload.trim())
    var bytes = new Uint8Array(binary.length)
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'))
    return new Response(stream).text()
  }

  var ready = decode().then(function (text) {
    lines = text.split('\n')
    document.documentElement.setAttribute('data-evals-details', 'ready')
  }, function (err) {
    failure = String(err && err.message ? err.message : err)
    document.documentElement.setAttribute('data-evals-details', 'unavailable')
  })

  function el (tag, text, cls) {
    var node = document.createElement(tag)
    if (text !== undefined && text !== null) node.textContent = String(text)
    if (cls) node.className = cls
    return node
  }

  function isMessage (v) {
    return v && typeof v === 'object' && !Array.isArray(v) && typeof v.role === 'string' && 'content' in v
  }

  function renderValue (v, depth) {
    if (v === null || v === undefined) return el('span', 'null')
    if (typeof v === 'string') {
      return (v.length > 80 || v.indexOf('\n') >= 0) ? el('pre', v) : el('span', v)
    }
    if (typeof v !== 'object') return el('code', String(v))
    if (depth > 10) return el('pre', JSON.stringify(v))
    var dl
    if (Array.isArray(v)) {
      if (v.length && v.every(isMessage)) {
        dl = el('dl')
        v.forEach(function (m) {
          dl.appendChild(el('dt', m.role))
          var dd = el('dd')
          dd.appendChild(renderValue(m.content, depth + 1))
          dl.appendChild(dd)
        })
        return dl
      }
      var ol = el('ol')
      v.forEach(function (item) {
        var li = el('li')
        li.appendChild(renderValue(item, depth + 1))
        ol.appendChild(li)
      })
      return ol
    }
    dl = el('dl')
    Object.keys(v).forEach(function (key) {
      dl.appendChild(el('dt', key))
      var dd = el('dd')
      dd.appendChild(renderValue(v[key], depth + 1))
      dl.appendChild(dd)
    })
    return dl
  }

  function fmt (x) {
    if (x === null || x === undefined) return ''
    if (typeof x === 'number') return Number.isInteger(x) ? String(x) : x.toFixed(3)
    return String(x)
  }

  function renderEntry (k, e) {
    var box = el('div', null, 'evals-detail')
    box.setAttribute('data-k', String(k))
    var head = el('p')
    head.appendChild(el('strong', String(e.st).toUpperCase() + (e.ek ? ' [' + e.ek + ' error]' : '')))
    head.appendChild(document.createTextNode(' case ' + e.id + ' · ' + e.src + ' · ' + e.task))
    box.appendChild(head)
    if (e.msg) box.appendChild(el('pre', e.msg, 'evals-msg'))
    if (e.sc && e.sc.length) {
      var table = el('table', null, 'evals-scores')
      var hr = el('tr')
      ;['metric', 'score', 'threshold', 'result'].forEach(function (h) { hr.appendChild(el('th', h)) })
      table.appendChild(hr)
      e.sc.forEach(function (row) {
        var tr = el('tr')
        tr.appendChild(el('th', row[0]))
        tr.appendChild(el('td', row[1] === null ? 'undefined' : fmt(row[1])))
        tr.appendChild(el('td', fmt(row[2])))
        tr.appendChild(el('td', row[3] === true ? 'pass' : row[3] === false ? 'FAIL' : '',
          row[3] === true ? 'evals-pass' : row[3] === false ? 'evals-fail' : ''))
        table.appendChild(tr)
      })
      box.appendChild(table)
    }
    if (e.lv === 'summary') {
      box.appendChild(el('p', 'Summarised detail (the beginning of the inputs). The full case is in results.jsonl of --evals-report-dir, or run with --evals-html-detail full.', 'evals-summarised'))
    }
    ;(e.sec || []).forEach(function (section) {
      box.appendChild(el('h4', section[0]))
      var dl = el('dl')
      section[1].forEach(function (item) {
        dl.appendChild(el('dt', item[0]))
        var dd = el('dd')
        dd.appendChild(renderValue(item[1], 0))
        dl.appendChild(dd)
      })
      box.appendChild(dl)
    })
    if (e.use) {
      box.appendChild(el('h4', 'Model usage'))
      box.appendChild(renderValue(e.use, 0))
    }
    if (e.cut) box.appendChild(el('p', e.cut + ' long value(s) were cut (evals_html_field_chars); see results.jsonl.', 'evals-summarised'))
    return box
  }

  function fill (tbody) {
    var extras = tbody.querySelector('.extras-row')
    var cell = tbody.querySelector('td[data-k]')
    var target = tbody.querySelector('.extraHTML')
    if (!extras || !cell || !target || extras.classList.contains('hidden')) return
    if (target.querySelector('.evals-detail')) return
    var k = Number(cell.getAttribute('data-k'))
    ready.then(function () {
      if (target.querySelector('.evals-detail')) return
      if (failure !== null) {
        target.appendChild(el('p', 'Case details unavailable: ' + failure, 'evals-summarised'))
        return
      }
      var line = lines[k]
      if (!line) return
      target.appendChild(renderEntry(k, JSON.parse(line)))
    })
  }

  var leftOut = Object.keys(dropped).reduce(function (n, k) { return n + dropped[k] }, 0)
  var runCount = document.querySelector('.run-count')
  if (runCount && leftOut > 0) {
    runCount.appendChild(document.createTextNode(' ' + leftOut + ' more case(s) are only in the case list.'))
  }

  // -- the case list: every case of the store, filtered and paged ----------------------
  var PAGE = 50
  function caseList () {
    var box = document.getElementById('evals-cases')
    var body = box && box.querySelector('.evals-cases-body')
    if (!body || failure !== null) {
      if (body) body.appendChild(el('p', 'Case list unavailable: ' + failure, 'evals-summarised'))
      return
    }
    var entries = lines.filter(function (l) { return l }).map(function (l) { return JSON.parse(l) })
    var state = { status: '', query: '', page: 0 }
    var controls = el('div', null, 'evals-cases-controls')
    var select = el('select')
    ;[['', 'all'], ['failed', 'failed'], ['error', 'errors'], ['passed', 'passed'], ['skipped', 'skipped']].forEach(function (o) {
      var opt = el('option', o[1])
      opt.value = o[0]
      select.appendChild(opt)
    })
    var search = el('input')
    search.type = 'search'
    search.placeholder = 'search case id, suite, verdict'
    var prev = el('button', '< previous')
    var next = el('button', 'next >')
    var info = el('span', '', 'evals-cases-info')
    ;[select, search, prev, next, info].forEach(function (c) { controls.appendChild(c) })
    var table = el('table', null, 'evals-cases-table')
    body.appendChild(controls)
    body.appendChild(table)

    function matches (e) {
      if (state.status && e.st !== state.status) return false
      if (!state.query) return true
      var hay = (e.id + ' ' + e.sn + ' ' + e.vd + ' ' + e.node).toLowerCase()
      return hay.indexOf(state.query) >= 0
    }
    function draw () {
      var shown = []
      entries.forEach(function (e, k) { if (matches(e)) shown.push(k) })
      var pages = Math.max(1, Math.ceil(shown.length / PAGE))
      state.page = Math.min(state.page, pages - 1)
      while (table.firstChild) table.removeChild(table.firstChild)
      var head = el('tr')
      ;['result', 'suite', 'case', 'scores', 'verdict'].forEach(function (h) { head.appendChild(el('th', h)) })
      table.appendChild(head)
      shown.slice(state.page * PAGE, (state.page + 1) * PAGE).forEach(function (k) {
        var e = entries[k]
        var tr = el('tr', null, 'evals-case evals-st-' + e.st)
        tr.setAttribute('data-k', String(k))
        ;[e.st, e.sn, e.id, e.ss, e.vd].forEach(function (v) { tr.appendChild(el('td', v)) })
        tr.addEventListener('click', function () {
          var open = tr.nextSibling && tr.nextSibling.classList && tr.nextSibling.classList.contains('evals-case-detail')
          if (open) { table.removeChild(tr.nextSibling); return }
          var dr = el('tr', null, 'evals-case-detail')
          var td = el('td')
          td.colSpan = 5
          td.appendChild(renderEntry(k, e))
          dr.appendChild(td)
          table.insertBefore(dr, tr.nextSibling)
        })
        table.appendChild(tr)
      })
      var first = shown.length ? state.page * PAGE + 1 : 0
      info.textContent = ' ' + first + '-' + Math.min(shown.length, (state.page + 1) * PAGE) + ' of ' + shown.length +
        ' (page ' + (state.page + 1) + ' of ' + pages + ')'
      prev.disabled = state.page === 0
      next.disabled = state.page >= pages - 1
    }
    select.addEventListener('change', function () { state.status = select.value; state.page = 0; draw() })
    search.addEventListener('input', function () { state.query = search.value.trim().toLowerCase(); state.page = 0; draw() })
    prev.addEventListener('click', function () { state.page -= 1; draw() })
    next.addEventListener('click', function () { state.page += 1; draw() })
    draw()
    box.setAttribute('data-ready', '1')
  }
  ready.then(caseList)

  var observer = ('IntersectionObserver' in window) ? new IntersectionObserver(function (changes) {
    changes.forEach(function (change) {
      if (change.isIntersecting) {
        observer.unobserve(change.target)
        fill(change.target)
      }
    })
  }, { rootMargin: '400px 0px' }) : null

  var seen = null
  function scan () {
    var table = document.getElementById('results-table')
    if (!table || table === seen) return
    seen = table
    var bodies = table.tBodies
    for (var i = 0; i < bodies.length; i++) {
      var body = bodies[i]
      if (!body.querySelector('td[data-k]')) continue
      if (observer) observer.observe(body)
      else fill(body)
    }
  }

  function start () {
    scan()
    // pytest-html replaces #results-table (a child of <body>) on every redraw.
    new MutationObserver(scan).observe(document.body, { childList: true })
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start)
  else start()
})()
