// The connect service under /connect: the login pages (GET /authorize and its form steps) and
// the token endpoint, wrapped by the fault layer as `connect.token`.
import express, { Router } from 'express';
import type { SandboxContext } from './context.ts';
import { withFaults } from './faults.ts';
import { loginFlowRouter } from './login-flow.ts';
import { tokenEndpoint } from './token-endpoint.ts';

export function connectRouter(context: SandboxContext): Router {
  const router = Router();
  router.use(express.urlencoded({ extended: false, limit: '16kb' }));
  router.use(loginFlowRouter(context));
  router.post('/token', withFaults('connect.token', 'oauth', context.faultContext, tokenEndpoint(context)));
  return router;
}
