// The commands over the ops API (fund, pay, status, fundings, batches, payments, links, accounts,
// ledger, settlement-report): their flags and help. Each action loads its module only when it runs, so `walletflow
// --help` and every other command start without them. Every one takes --api and --output.
import { Option, type Command } from 'commander';
import type { FundOptions } from './fund.ts';
import type { ListOptions } from './ops-input.ts';
import type { OpsCommandOptions } from './output.ts';
import type { PayOptions } from './pay.ts';
import type { StatusOptions } from './status.ts';

const fundingStatuses = [
  'PENDING',
  'CREATING',
  'EXECUTING',
  'RECONCILING',
  'NEEDS_REVIEW',
  'APPROVED',
  'DECLINED',
  'REJECTED',
  'FAILED',
];
const paymentStatuses = ['PENDING', 'CREATING', 'EXECUTING', 'NEEDS_REVIEW', 'SUCCEEDED', 'FAILED'];
const batchStates = ['AWAITING_APPROVAL', 'RUNNING', 'PAUSED', 'COMPLETED', 'CANCELLED', 'REJECTED'];

const keyHelp = `The ops API key: $WALLETFLOW_OPS_KEY, else the file $WALLETFLOW_OPS_KEY_FILE names, else the
first of $OPS_API_KEYS, else the key \`walletflow dev\` saved (never a flag: it would land in shell history).`;

/** --api, --output and the key's help on an ops command. */
function ops(command: Command, formats: string[] = ['json', 'text']): Command {
  return command
    .option('--api <url>', 'ops API base URL (default: $WALLETFLOW_API_URL, else http://127.0.0.1:${PORT:-3000})')
    .addOption(new Option('--output <format>', 'what to print').choices(formats).default('text'))
    .addOption(new Option('--key <key>', 'no longer accepted').hideHelp())
    .addHelpText('after', `\n${keyHelp}`);
}

const run = (exit: Promise<number>) => exit.then((code) => void (process.exitCode = code));
const apiExits =
  '3 the API refused the request, is not reachable, or gave no answer (a write: possibly applied, its key said); 64 bad input (nothing was sent); 78 no ops API key found.';

function listOptions(command: Command, statuses: string[]): Command {
  return command
    .addOption(new Option('--status <status>', 'only this status').choices(statuses))
    .option('--from <time>', 'created at or after (ISO-8601 with an offset)')
    .option('--to <time>', 'created before (ISO-8601 with an offset)')
    .option('--limit <n>', 'items per page (1 to 200)', '50')
    .option('--cursor <cursor>', 'the next page a previous run printed');
}

function resolveOptions(command: Command, outcomes: string[]): Command {
  return command
    .addOption(
      new Option('--outcome <outcome>', 'what the wallet operator confirmed').choices(outcomes).makeOptionMandatory(),
    )
    .requiredOption('--note <text>', 'why (stored with the resolution; say who at the operator confirmed it)')
    .option('--actor <name>', 'who resolves (recorded with the key’s name)');
}

export function registerOpsCommands(program: Command): void {
  ops(
    program
      .command('fund')
      .description('fund a wallet through the ops API and follow the funding until it is final')
      .option(
        '--code [code]',
        "the recipient's 7-digit cash-in code (never printed whole); --code alone reads it from standard input, or asks for it on a terminal, so it stays out of the shell history and ps",
      )
      .option('--link <linkId>', 'the recipient by linked wallet account (link id)')
      .requiredOption('--amount <value>', 'the amount as a decimal string, e.g. 100.50')
      .option('--currency <currency>', 'ISO 4217 currency', 'PHP')
      .option(
        '--idempotency-key <key>',
        'reuse the key a previous attempt printed to retry it safely (default: a fresh UUID)',
      )
      .option('--no-wait', 'return once the API has accepted the funding')
      .option('--timeout <seconds>', 'how long to follow the funding', '120')
      .option('--plain', 'plain lines, one per event, even on a terminal'),
  )
    .addHelpText(
      'after',
      `
Give exactly one of --code and --link; --code with no value asks for the code (or reads it
from standard input). With --output json the steps go to stderr and the
final funding (as GET /ops/fundings/{id} gives it) to stdout.

Exit codes: 0 APPROVED (or accepted, with --no-wait); 1 DECLINED, REJECTED or FAILED;
2 not final within --timeout (the funding goes on); ${apiExits}`,
    )
    .action((options: FundOptions) => run(import('./fund.ts').then((module) => module.runFund(options))));

  ops(
    program
      .command('pay')
      .description('take a merchant payment (to MERCHANT_P2M_ID) from a linked wallet and follow it until it is final')
      .requiredOption('--link <linkId>', "the payer's linked wallet account (link id)")
      .requiredOption('--amount <value>', 'the amount as a decimal string, e.g. 25.00')
      .option('--currency <currency>', 'ISO 4217 currency', 'PHP')
      .option(
        '--idempotency-key <key>',
        'reuse the key a previous attempt printed to retry it safely (default: a fresh UUID)',
      )
      .option('--no-wait', 'return once the API has accepted the payment')
      .option('--timeout <seconds>', 'how long to follow the payment', '120'),
  )
    .addHelpText(
      'after',
      `
Exit codes: 0 SUCCEEDED (or accepted, with --no-wait); 1 FAILED; 2 not final within --timeout
(the payment goes on); 4 NEEDS_REVIEW (an execute whose outcome is unknown: resolve it with
walletflow payments resolve); ${apiExits}`,
    )
    .action((options: PayOptions) => run(import('./pay.ts').then((module) => module.runPay(options))));

  ops(
    program
      .command('status')
      .description('show a funding and its timeline (the same as `fundings get`)')
      .argument('<fundingId>', 'the funding id `walletflow fund` printed')
      .option('--json', 'the same as --output json'),
  )
    .addHelpText('after', `\nExit codes: 0 found; 1 no such funding; ${apiExits}`)
    .action((fundingId: string, options: StatusOptions) =>
      run(import('./status.ts').then((module) => module.runStatus(fundingId, options))),
    );

  const fundings = program.command('fundings').description('fundings: list, get, cancel, resolve a review');
  ops(
    listOptions(fundings.command('list').description('fundings, newest first, a page at a time'), fundingStatuses),
  ).action((options: OpsCommandOptions & ListOptions) =>
    run(import('./fundings.ts').then((module) => module.runFundingsList(options))),
  );
  ops(fundings.command('get').description('a funding and its timeline').argument('<fundingId>'))
    .addHelpText('after', `\nExit codes: 0 found; 1 no such funding; ${apiExits}`)
    .action((id: string, options: OpsCommandOptions) =>
      run(import('./fundings.ts').then((module) => module.runFundingsGet(id, options))),
    );
  ops(
    fundings
      .command('cancel')
      .description('cancel a funding that has not started executing (it ends FAILED, code CANCELLED)')
      .argument('<fundingId>'),
  )
    .addHelpText('after', `\nExit codes: 0 cancelled; ${apiExits} (409 FUNDING_NOT_CANCELLABLE: executing or final)`)
    .action((id: string, options: OpsCommandOptions) =>
      run(import('./fundings.ts').then((module) => module.runFundingsCancel(id, options))),
    );
  ops(
    resolveOptions(
      fundings
        .command('resolve')
        .description('resolve a funding in NEEDS_REVIEW after checking with the wallet operator (docs/runbook.md)')
        .argument('<fundingId>'),
      ['APPROVED', 'FAILED'],
    ),
  )
    .addHelpText(
      'after',
      `\nAPPROVED posts the hold; FAILED releases it and says nothing was executed.\nExit codes: 0 resolved; ${apiExits} (409 FUNDING_NOT_IN_REVIEW; 409 NEVER_EXECUTED: APPROVED for a funding walletflow never executed)`,
    )
    .action((id: string, options: OpsCommandOptions & { outcome: string; note: string; actor?: string }) =>
      run(import('./fundings.ts').then((module) => module.runFundingsResolve(id, options))),
    );

  const batches = program
    .command('batches')
    .description('funding batches: create from a CSV file, follow, approve, pause, resume, cancel, report');
  const batchModule = () => import('./batches.ts');
  ops(
    batches
      .command('create')
      .description(
        'create a batch from a CSV file (reference,recipient_type,recipient,amount): every row is checked before anything is stored',
      )
      .requiredOption(
        '--file <path>',
        'the CSV file (header reference,recipient_type,recipient,amount; amounts in PHP)',
      )
      .option('--name <name>', 'what the batch is (default: the file name)')
      .option('--source <source>', 'whose money: TREASURY (default) or USER_BALANCE:<partnerUserId>')
      .option(
        '--idempotency-key <key>',
        'reuse the key a previous attempt printed to retry it safely (default: a fresh UUID)',
      ),
  )
    .addHelpText(
      'after',
      `\nExit codes: 0 stored; 1 the file has problems (each printed: row, reference, field, code); ${apiExits}`,
    )
    .action((options: OpsCommandOptions & { file: string; name?: string; source?: string; idempotencyKey?: string }) =>
      run(batchModule().then((module) => module.runBatchesCreate(options))),
    );
  ops(
    batches
      .command('list')
      .description('batches, newest first, a page at a time')
      .addOption(new Option('--state <state>', 'only this state').choices(batchStates))
      .option('--limit <n>', 'batches per page (1 to 200)', '50')
      .option('--cursor <cursor>', 'the next page a previous run printed'),
  ).action((options: OpsCommandOptions & { state?: string; limit?: string; cursor?: string }) =>
    run(batchModule().then((module) => module.runBatchesList(options))),
  );
  ops(
    batches
      .command('get')
      .description('a batch: state, counts and amounts by state, rate and ETA')
      .argument('<batchId>'),
  ).action((id: string, options: OpsCommandOptions) =>
    run(batchModule().then((module) => module.runBatchesGet(id, options))),
  );
  ops(
    batches
      .command('items')
      .description('a batch’s items in reference order, a page at a time')
      .argument('<batchId>')
      .addOption(new Option('--status <status>', 'only this state').choices([...fundingStatuses, 'CANCELLED']))
      .option('--limit <n>', 'items per page (1 to 1000)', '100')
      .option('--cursor <cursor>', 'the next page a previous run printed'),
  ).action((id: string, options: OpsCommandOptions & { status?: string; limit?: string; cursor?: string }) =>
    run(batchModule().then((module) => module.runBatchesItems(id, options))),
  );
  for (const [name, move, help] of [
    [
      'approve',
      'approveFundingBatch',
      'approve a batch AWAITING_APPROVAL (needs the approve scope, and a key other than its creator’s)',
    ],
    ['reject', 'rejectFundingBatch', 'reject a batch AWAITING_APPROVAL: no item starts, its holds are released'],
    ['pause', 'pauseFundingBatch', 'pause a RUNNING batch: no new item starts'],
    ['resume', 'resumeFundingBatch', 'resume a PAUSED batch'],
    ['cancel', 'cancelFundingBatch', 'cancel a batch: items not yet started end CANCELLED and release their share'],
  ] as const) {
    ops(batches.command(name).description(help).argument('<batchId>'))
      .addHelpText(
        'after',
        `\nExit codes: 0 done; ${apiExits} (409 BATCH_STATE: not from this state; 403 SAME_APPROVER)`,
      )
      .action((id: string, options: OpsCommandOptions) =>
        run(batchModule().then((module) => module.runBatchesMove(move, name)(id, options))),
      );
  }
  ops(
    batches
      .command('report')
      .description('a batch’s report as CSV on standard output, one row per item')
      .argument('<batchId>'),
    ['text'],
  ).action((id: string, options: OpsCommandOptions) =>
    run(batchModule().then((module) => module.runBatchesReport(id, options))),
  );
  ops(
    batches
      .command('watch')
      .description('follow a batch with a live progress bar (done/total, rate, ETA, counts by state) until it is done')
      .argument('<batchId>')
      .option('--interval <seconds>', 'how often to look', '1'),
  )
    .addHelpText('after', `\nExit codes: 0 COMPLETED; 1 CANCELLED or REJECTED; ${apiExits}`)
    .action((id: string, options: OpsCommandOptions & { interval?: string }) =>
      run(batchModule().then((module) => module.runBatchesWatch(id, options))),
    );

  const payments = program.command('payments').description('merchant payments: list, get, resolve a review');
  ops(
    listOptions(payments.command('list').description('payments, newest first, a page at a time'), paymentStatuses),
  ).action((options: OpsCommandOptions & ListOptions) =>
    run(import('./payments.ts').then((module) => module.runPaymentsList(options))),
  );
  ops(
    payments
      .command('get')
      .description('a payment, its timeline and any review')
      .argument('<paymentId>', "walletflow's id, or the wallet's payment id"),
  )
    .addHelpText('after', `\nExit codes: 0 found; 1 no such payment; ${apiExits}`)
    .action((id: string, options: OpsCommandOptions) =>
      run(import('./payments.ts').then((module) => module.runPaymentsGet(id, options))),
    );
  ops(
    resolveOptions(
      payments
        .command('resolve')
        .description('resolve a payment in NEEDS_REVIEW after checking with the wallet operator (docs/runbook.md)')
        .argument('<paymentId>'),
      ['SUCCEEDED', 'FAILED'],
    ),
  )
    .addHelpText(
      'after',
      `\nExit codes: 0 resolved; ${apiExits} (409 PAYMENT_NOT_IN_REVIEW; 409 NEVER_EXECUTED: SUCCEEDED for a payment never executed)`,
    )
    .action((id: string, options: OpsCommandOptions & { outcome: string; note: string; actor?: string }) =>
      run(import('./payments.ts').then((module) => module.runPaymentsResolve(id, options))),
    );

  const links = program.command('links').description("users' wallet links: get, find, profile, unlink, login-url");
  ops(
    links.command('get').description('a link: status, kind, scopes, token expiry (never a token)').argument('<linkId>'),
  ).action((id: string, options: OpsCommandOptions) =>
    run(import('./links.ts').then((module) => module.runLinksGet(id, options))),
  );
  ops(
    links
      .command('find')
      .description("a user's links, by partner user id or wallet profile id")
      .option('--partner-user-id <id>')
      .option('--profile-id <id>'),
  ).action((options: OpsCommandOptions & { partnerUserId?: string; profileId?: string }) =>
    run(import('./links.ts').then((module) => module.runLinksFind(options))),
  );
  ops(
    links.command('profile').description("the user's wallet profile, fetched now (never stored)").argument('<linkId>'),
  ).action((id: string, options: OpsCommandOptions) =>
    run(import('./links.ts').then((module) => module.runLinksProfile(id, options))),
  );
  ops(
    links
      .command('unlink')
      .description('unlink: the tokens are deleted; the link stays, UNLINKED')
      .argument('<linkId>'),
  ).action((id: string, options: OpsCommandOptions) =>
    run(import('./links.ts').then((module) => module.runLinksUnlink(id, options))),
  );
  ops(
    links
      .command('login-url')
      .description(
        'a single-use login URL for a partner user (valid 10 minutes): the user logs in and the link is made',
      )
      .argument('<partnerUserId>')
      .option('--mobile <number>', "pin the wallet's login page to this mobile number"),
  ).action((partnerUserId: string, options: OpsCommandOptions & { mobile?: string }) =>
    run(import('./links.ts').then((module) => module.runLinksLoginUrl(partnerUserId, options))),
  );

  const accounts = program.command('accounts').description("the partner's ledger accounts (docs/ledger.md)");
  ops(
    accounts
      .command('get')
      .description('an account: balance, held, available')
      .argument(
        '<account>',
        'TREASURY (or IN_FLIGHT, WALLET_CLEARING, MERCHANT_REVENUE, CAPITAL), else a partner user id',
      ),
  ).action((account: string, options: OpsCommandOptions) =>
    run(import('./ledger.ts').then((module) => module.runAccountsGet(account, options))),
  );
  ops(
    accounts
      .command('adjust')
      .description(
        "adjust a partner user's account (other leg: TREASURY) or the treasury (other leg: CAPITAL; scope admin too)",
      )
      .argument('<account>', 'a partner user id, or TREASURY')
      .requiredOption('--amount <value>', 'signed decimal string: -25.00 debits, 25.00 credits')
      .requiredOption('--reason <text>', 'why (stored with the adjustment)')
      .option('--currency <currency>', 'ISO 4217 currency', 'PHP')
      .option(
        '--idempotency-key <key>',
        'reuse the key a previous attempt printed to retry it safely (default: a fresh UUID)',
      ),
  ).action(
    (
      account: string,
      options: OpsCommandOptions & { amount: string; reason: string; currency: string; idempotencyKey?: string },
    ) => run(import('./ledger.ts').then((module) => module.runAccountsAdjust(account, options))),
  );
  ops(
    program
      .command('ledger')
      .description('ledger entries, newest first')
      .option('--account <account>', 'only this account (TREASURY, USER:{partnerUserId}, …)')
      .option('--limit <n>', 'entries per page (1 to 200)', '50')
      .option('--cursor <cursor>', 'the next page a previous run printed'),
  ).action((options: OpsCommandOptions & { account?: string; limit: string; cursor?: string }) =>
    run(import('./ledger.ts').then((module) => module.runLedger(options))),
  );
  ops(
    program
      .command('settlement-report')
      .description("a day's approved fundings and succeeded payments against the wallet's records and the ledger")
      .requiredOption('--date <YYYY-MM-DD>', "the day, in the API's SETTLEMENT_TZ (not this machine's time zone)")
      .option('--fresh', 'settle the day again (a fresh run), and wait for its report'),
    ['json', 'csv', 'text'],
  )
    .addHelpText(
      'after',
      `\nThe first report of a day starts its run; a bar on stderr follows it (Ctrl-C leaves it running).\nExit codes: 0 every item of the whole day matched; 4 every item matched, of the day so far (the day is not over); 1 something missing or mismatched; ${apiExits}`,
    )
    .action((options: OpsCommandOptions & { date: string; fresh?: boolean }) =>
      run(import('./ledger.ts').then((module) => module.runSettlementReport(options))),
    );
  const webhooks = program
    .command('webhooks')
    .description("signed webhooks to the partner's systems (contract-decisions section 13)");
  const endpoints = webhooks.command('endpoints').description('where events are sent: create, get, delete');
  ops(
    endpoints
      .command('create')
      .description('register an endpoint; its signing secret is printed once')
      .argument('<url>', 'the http(s) URL events are POSTed to')
      .requiredOption('--events <list>', 'comma-separated event types, e.g. funding.approved,payment.succeeded'),
  ).action((url: string, options: OpsCommandOptions & { events: string }) =>
    run(import('./webhook-commands.ts').then((module) => module.runWebhookEndpointCreate(url, options))),
  );
  ops(endpoints.command('get').description('an endpoint (never its secret)').argument('<endpointId>')).action(
    (id: string, options: OpsCommandOptions) =>
      run(import('./webhook-commands.ts').then((module) => module.runWebhookEndpointGet(id, options))),
  );
  ops(
    endpoints
      .command('delete')
      .description('delete an endpoint: no new deliveries; its pending ones end FAILED')
      .argument('<endpointId>'),
  ).action((id: string, options: OpsCommandOptions) =>
    run(import('./webhook-commands.ts').then((module) => module.runWebhookEndpointDelete(id, options))),
  );
  ops(
    webhooks
      .command('deliveries')
      .description('deliveries, newest first, with their attempt logs')
      .option('--endpoint-id <id>', 'only this endpoint’s')
      .addOption(new Option('--status <status>', 'only this status').choices(['PENDING', 'SUCCEEDED', 'FAILED']))
      .option('--limit <n>', 'items per page (1 to 200)', '50')
      .option('--cursor <cursor>', 'the next page a previous run printed'),
  ).action(
    (
      options: OpsCommandOptions & {
        endpointId?: string;
        status?: 'PENDING' | 'SUCCEEDED' | 'FAILED';
        limit: string;
        cursor?: string;
      },
    ) => run(import('./webhook-commands.ts').then((module) => module.runWebhookDeliveries(options))),
  );
  ops(
    webhooks
      .command('redeliver')
      .description('send a delivery again now (a dead letter, or a delivered one)')
      .argument('<deliveryId>')
      .option('--actor <name>', 'who sends it again (stored with the key’s name as the delivery’s redeliveredBy)'),
  ).action((id: string, options: OpsCommandOptions & { actor?: string }) =>
    run(import('./webhook-commands.ts').then((module) => module.runWebhookRedeliver(id, options))),
  );
  webhooks
    .command('listen')
    .description(
      'register a temporary endpoint for every event, print and verify each one, forward it; Ctrl-C deletes the endpoint',
    )
    .option('--forward-to <url>', 'where each verified event is POSTed, with its webhook-* headers')
    .option('--port <port>', 'the local receiver’s port on 127.0.0.1 (default: any free one)')
    .option('--api <url>', 'ops API base URL (default: $WALLETFLOW_API_URL, else http://127.0.0.1:${PORT:-3000})')
    .addOption(new Option('--key <key>', 'no longer accepted').hideHelp())
    .addHelpText(
      'after',
      `\n${keyHelp}\n\nExit codes: 0 stopped and the endpoint deleted; 3 the API refused or is not reachable; 64 bad usage; 78 no ops API key found.`,
    )
    .action(async (options: { forwardTo?: string; port?: string; api?: string }) =>
      run((await import('./webhooks.ts')).runWebhooksListen(options)),
    );
}
