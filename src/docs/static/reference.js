// The reference page's only script, served from the server itself (the page's
// Content-Security-Policy allows no inline script). The page reads whole
// without it; it adds the filter box, which narrows the page's sections and
// codes to those whose text holds what is typed.
'use strict';

/** The page's parts: each second-level heading with what follows it, and each code's own section. */
function partsOf(main) {
  const groups = [];
  let current = null;
  for (const el of main.children) {
    const heading = el.tagName === 'H2' ? el : el.tagName === 'SECTION' ? el.querySelector(':scope > h2') : null;
    if (heading !== null || current === null) {
      current = { elements: [], codes: [...el.querySelectorAll('section.code')], title: heading ? heading.textContent : '' };
      groups.push(current);
    }
    current.elements.push(el);
  }
  return groups;
}

function setUpFilter() {
  const box = document.getElementById('filter');
  const main = document.querySelector('main');
  if (!box || !main) return;
  const status = document.getElementById('filter-status');
  const groups = partsOf(main);
  const indexEntries = [...document.querySelectorAll('#code-index li')];
  const contentsEntries = [...document.querySelectorAll('nav[aria-label="Contents"] li')];
  const total = groups.reduce((n, g) => n + g.codes.length, 0);
  box.closest('form').hidden = false;
  box.closest('form').addEventListener('submit', (event) => {
    event.preventDefault();
    // Enter goes to the first part still shown.
    const first = groups.find((g) => !g.elements[0].hidden);
    if (first) first.elements[0].scrollIntoView();
  });

  box.addEventListener('input', () => {
    const q = box.value.trim().toLowerCase();
    const holds = (el) => q === '' || el.textContent.toLowerCase().includes(q);
    let codes = 0;
    let sections = 0;
    const shownIds = new Set();
    for (const g of groups) {
      let shown;
      if (g.codes.length > 0) {
        // A heading that matches keeps all its codes; else only the codes that match.
        const all = holds({ textContent: g.title });
        for (const c of g.codes) {
          c.hidden = !(all || holds(c));
          if (!c.hidden) {
            codes++;
            shownIds.add(c.id);
          }
        }
        shown = g.codes.some((c) => !c.hidden);
        for (const el of g.elements) el.hidden = !shown;
      } else {
        shown = g.elements.some(holds);
        for (const el of g.elements) el.hidden = !shown;
      }
      if (shown) {
        sections++;
        const id = g.elements[0].id;
        if (id) shownIds.add(id);
      }
    }
    for (const li of [...indexEntries, ...contentsEntries]) {
      const target = li.querySelector('a').getAttribute('href').slice(1);
      li.hidden = q !== '' && !shownIds.has(target);
    }
    status.textContent = q === '' ? '' : `${sections} section${sections === 1 ? '' : 's'} and ${codes} of ${total} codes hold “${box.value.trim()}”.`;
  });
}

document.addEventListener('DOMContentLoaded', setUpFilter);
