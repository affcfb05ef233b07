-- CreateTable
CREATE TABLE "attempt_count" (
    "kind" VARCHAR(100) NOT NULL,
    "subject" VARCHAR(64) NOT NULL,
    "window_start" TIMESTAMPTZ(3) NOT NULL,
    "count" INTEGER NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "attempt_count_pkey" PRIMARY KEY ("kind","subject","window_start")
);

-- CreateIndex
CREATE INDEX "attempt_count_expires_at_idx" ON "attempt_count"("expires_at");
