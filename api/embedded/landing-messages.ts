// What the landing page says when it shows no money page: refusals, errors and "open the app
// again", in words for the user (never an internal code alone).
import type { MessagePage } from './landing-pages.ts';
import { reopenFromWallet } from './outcome-messages.ts';

export const messagePages = {
  unknown: {
    tone: 'error',
    title: 'This link is not valid',
    paragraphs: ['We do not know this session. Please open the app again from your wallet.'],
  },
  used: {
    tone: 'error',
    title: 'This link was already used',
    paragraphs: [
      'For your security, each link from the wallet opens the app once. Please open the app again from your wallet.',
    ],
  },
  expired: {
    tone: 'error',
    title: 'This link has expired',
    paragraphs: [
      'Links from the wallet must be opened within a couple of minutes. Please open the app again from your wallet.',
    ],
  },
  noSession: {
    tone: 'info',
    title: 'Open the app from your wallet',
    paragraphs: ['Your session has ended or was never started. Please open the app again from your wallet.'],
  },
  reopen: { tone: 'error', title: 'Please reopen the app', paragraphs: [reopenFromWallet] },
  onboardingFailed: {
    tone: 'error',
    title: 'We could not open your account',
    paragraphs: ['The wallet did not answer in time. Please close this page and open the app again from your wallet.'],
  },
  csrf: {
    tone: 'error',
    title: 'This form has expired',
    paragraphs: [
      'For your security, this form can only be sent from the page that showed it. Please go back to the app and try again.',
    ],
  },
  formReused: {
    tone: 'error',
    title: 'This form was already sent',
    paragraphs: ['This form was already sent with another amount. Please go back to the app and start again.'],
  },
  notFound: { tone: 'error', title: 'Not found', paragraphs: ['There is nothing here for this session.'] },
  tooMany: { tone: 'error', title: 'Too many requests', paragraphs: ['Please wait a moment and try again.'] },
  formTooLarge: {
    tone: 'error',
    title: 'This form is too large',
    paragraphs: ['Please go back to the app and enter the amount again.'],
  },
  unreadable: {
    tone: 'error',
    title: 'We could not read this request',
    paragraphs: ['Please go back to the app and try again.'],
  },
  broken: {
    tone: 'error',
    title: 'Something went wrong',
    paragraphs: ['Please try again in a moment, or open the app again from your wallet.'],
  },
  busy: {
    tone: 'error',
    title: 'Busy right now',
    paragraphs: [
      'Many people are using this at the same time. Nothing was done with your money: please try again in a few seconds.',
    ],
  },
  /** The database refused a connection (lib/admission.ts): a withdrawal or deposit may have been stored before it. */
  busyMaybeKept: {
    tone: 'error',
    title: 'Busy right now',
    paragraphs: [
      'Many people are using this at the same time. Please try again in a minute. A withdrawal or deposit you already sent is kept, and shows in your activity: look there before you send it again.',
    ],
  },
  /**
   * Temporal could not take a call of a request no form words (lib/workflow-unavailable.ts); the forms go to their
   * progress page instead.
   */
  unavailable: {
    tone: 'error',
    title: 'Not available just now',
    paragraphs: [
      'This cannot be done at the moment. Please try again in a minute. A withdrawal or deposit you already sent is kept, and shows in your activity.',
    ],
  },
} satisfies Record<string, MessagePage>;
