// Lifetimes of the interface (wallet-service-interface.md, "Tokens and codes") and of the
// sandbox's own choices (contract-decisions section 3), in seconds on the sandbox clock.

export const lifetimes = {
  authorizationCode: 5 * 60,
  standaloneAccessToken: 3600,
  standaloneRefreshToken: 604800,
  embeddedAccessToken: 600,
  embeddedRefreshToken: 1200,
  clientToken: 3600,
  cashInCode: 30 * 60,
  identityDocumentUrl: 15 * 60,
  /** How long a half-finished login page flow stays usable (sandbox choice). */
  pendingLogin: 15 * 60,
} as const;
