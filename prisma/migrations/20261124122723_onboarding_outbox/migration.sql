-- CreateTable
CREATE TABLE "onboarding_outbox" (
    "session_id" UUID NOT NULL,
    "task_queue" VARCHAR(255) NOT NULL,
    "due_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "onboarding_outbox_pkey" PRIMARY KEY ("session_id")
);

-- CreateIndex
CREATE INDEX "onboarding_outbox_task_queue_due_at_idx" ON "onboarding_outbox"("task_queue", "due_at");

-- AddForeignKey
ALTER TABLE "onboarding_outbox" ADD CONSTRAINT "onboarding_outbox_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "embedded_session"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Sessions still PENDING when the outbox arrives had their onboarding started in the session URL's
-- request, or not (a failed start): queue them all once, for any dispatcher (task queue ''); a
-- repeated start finds the same workflow.
INSERT INTO "onboarding_outbox" ("session_id", "task_queue")
SELECT "id", '' FROM "embedded_session" WHERE "status" = 'PENDING';
