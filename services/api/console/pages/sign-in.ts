/** The sign-in page: one form that posts the API key (never in the address), with its token. */
import { html } from '../html';
import { page } from '../layout';
import { CSRF_FIELD } from '../security';

export interface SignInView {
  /** The form's token (its cookie holds the same). */
  token: string;
  /** Where to go once signed in (a console path). */
  next: string;
  /** What went wrong with the last attempt, or a note (signed out). */
  error?: string;
  note?: string;
}

export function signInPage(view: SignInView): string {
  return page({
    title: 'Sign in',
    body: html`<div class="signin">
<h1>Sign in</h1>
${view.note ? html`<p class="notice" role="status">${view.note}</p>` : ''}
${view.error ? html`<p class="notice error" role="alert" id="signin-error">${view.error}</p>` : ''}
<form method="post" action="/console/sign-in" autocomplete="off">
<input type="hidden" name="${CSRF_FIELD}" value="${view.token}">
<input type="hidden" name="next" value="${view.next}">
<div class="field">
<label for="key">API key</label>
<input id="key" name="key" type="password" required autocomplete="current-password" spellcheck="false" aria-describedby="key-help${view.error ? ' signin-error' : ''}"${view.error ? html` aria-invalid="true"` : ''} autofocus>
<p id="key-help" class="muted">The key (<code>sk_…</code>) shown when your account was made or its key last rotated. It is sent once to open a session and is not kept in your browser.</p>
</div>
<button type="submit">Sign in</button>
</form>
</div>`,
  });
}
