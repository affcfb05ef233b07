-- AlterTable
ALTER TABLE "ops_action" ADD COLUMN     "client" VARCHAR(64),
ADD COLUMN     "count" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "summary_of" VARCHAR(200);

-- CreateTable
CREATE TABLE "ops_action_budget" (
    "channel" VARCHAR(8) NOT NULL,
    "client" VARCHAR(64) NOT NULL,
    "window_start" TIMESTAMPTZ(3) NOT NULL,
    "recorded" INTEGER NOT NULL,

    CONSTRAINT "ops_action_budget_pkey" PRIMARY KEY ("channel","client","window_start")
);

-- CreateIndex
CREATE INDEX "ops_action_budget_window_start_idx" ON "ops_action_budget"("window_start");

-- CreateIndex
CREATE UNIQUE INDEX "ops_action_summary_of_key" ON "ops_action"("summary_of");
