// The connect service's login pages: password (or registration) then one-time password, with
// stable ids (#mobile, #password, #otp, #submit, #cancel) that browser tests rely on.
import { escapeHtml } from '../lib/html.ts';
import { page } from './html.ts';

/** The one-time password every sandbox user has; the OTP page shows it as a hint for testers. */
export const sandboxOtp = '123456';

export interface CredentialsPageInput {
  action: string;
  loginId: string;
  mode: 'login' | 'register';
  mobile: string | null;
  mobileFixed: boolean;
  error: string | null;
}

function errorBox(error: string | null): string {
  return error === null ? '' : `<p class="error" id="error" role="alert">${escapeHtml(error)}</p>`;
}

function buttons(submitLabel: string): string {
  return `<button class="primary" type="submit" id="submit" name="action" value="continue">${escapeHtml(submitLabel)}</button>
<button class="secondary" type="submit" id="cancel" name="action" value="cancel" formnovalidate>Cancel</button>`;
}

export function credentialsPage(input: CredentialsPageInput): string {
  const registering = input.mode === 'register';
  const mobileValue = input.mobile === null ? '' : ` value="${escapeHtml(input.mobile)}"`;
  const readOnly = input.mobileFixed ? ' readonly aria-readonly="true"' : ' required';
  const title = registering ? 'Create your wallet account' : 'Log in to your wallet';
  const intro = registering
    ? '<p>No wallet account uses this mobile number yet. Choose a password to create one.</p>'
    : '<p>Enter your wallet password to continue.</p>';
  return page(
    title,
    `<h1>${escapeHtml(title)}</h1>
${intro}
${errorBox(input.error)}
<form method="post" action="${escapeHtml(input.action)}" id="${registering ? 'register-form' : 'login-form'}">
<input type="hidden" name="login_id" value="${escapeHtml(input.loginId)}">
<label for="mobile">${registering ? 'Username (mobile number)' : 'Mobile number'}</label>
<input id="mobile" name="mobile" type="tel" inputmode="tel" autocomplete="username"${mobileValue}${readOnly}>
<label for="password">${registering ? 'Choose a password (at least 6 characters)' : 'Password'}</label>
<input id="password" name="password" type="password" autocomplete="${registering ? 'new-password' : 'current-password'}" required${registering ? ' minlength="6"' : ''}>
${buttons(registering ? 'Create account' : 'Log in')}
</form>`,
  );
}

export function otpPage(input: { action: string; loginId: string; mobile: string; error: string | null }): string {
  return page(
    'One-time password',
    `<h1>Enter your one-time password</h1>
<p>We sent a one-time password to ${escapeHtml(maskMobile(input.mobile))}.</p>
<p class="hint" id="otp-hint">sandbox OTP: <code>${sandboxOtp}</code> (the same for every sandbox user)</p>
${errorBox(input.error)}
<form method="post" action="${escapeHtml(input.action)}" id="otp-form">
<input type="hidden" name="login_id" value="${escapeHtml(input.loginId)}">
<label for="otp">One-time password</label>
<input id="otp" name="otp" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]*" maxlength="6" required>
${buttons('Verify')}
</form>`,
  );
}

export function errorPage(title: string, message: string): string {
  return page(
    title,
    `<h1>${escapeHtml(title)}</h1>\n<p class="error" id="error" role="alert">${escapeHtml(message)}</p>`,
  );
}

/** All but the last 4 characters hidden: the callback's userId and the OTP page's hint. */
export function maskMobile(mobile: string): string {
  return '*'.repeat(Math.max(0, mobile.length - 4)) + mobile.slice(-4);
}
