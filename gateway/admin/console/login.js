// login.js -- the console's login page: posts the admin secret to
// POST /console/login, which sets the session cookie, then opens the console.
'use strict';

document.getElementById('login-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const error = document.getElementById('login-error');
  const button = document.getElementById('login-button');
  const secret = document.getElementById('secret').value;
  error.hidden = true;
  button.disabled = true;
  try {
    const r = await fetch('/console/login', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ secret }),
      credentials: 'same-origin',
      cache: 'no-store',
    });
    if (r.ok) {
      location.assign('/console/');
      return;
    }
    let message = `${r.status} ${r.statusText}`;
    try {
      const body = await r.json();
      if (body && body.message) message = body.message;
    } catch (_) { /* not JSON: keep the status line */ }
    error.textContent = message;
  } catch (e) {
    error.textContent = `The gateway did not answer: ${e.message}`;
  }
  error.hidden = false;
  button.disabled = false;
});
