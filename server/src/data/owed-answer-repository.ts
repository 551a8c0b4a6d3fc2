import type { Sequelize } from 'sequelize';
import { pgQuery } from './pg-query';
import type { OwedSettleAnswers } from '../domain/facilitator/settle-payment';

/**
 * x402 settles answered `settlement_pending` that still owe their caller the final answer (migration 0080). A debt is
 * owed for OWED_HOURS (the stock retry comes at once); older rows are pruned when a new one is written.
 */
const OWED_HOURS = 24;
export function createOwedAnswerRepository(db: Sequelize): OwedSettleAnswers {
  return {
    async owe(attemptId) {
      await pgQuery(
        db,
        `DELETE FROM x402_settle_answers_owed WHERE created_at < now() - make_interval(hours => $1::int)`,
        [OWED_HOURS],
        'owed_answer_prune',
      );
      await pgQuery(
        db,
        `INSERT INTO x402_settle_answers_owed (payment_attempt_id) VALUES ($1) ON CONFLICT DO NOTHING`,
        [attemptId],
        'owed_answer_insert',
      );
    },
    async isOwed(attemptId) {
      const { rows } = await pgQuery(
        db,
        `SELECT 1 FROM x402_settle_answers_owed WHERE payment_attempt_id = $1 AND created_at >= now() - ` +
          `make_interval(hours => $2::int)`,
        [attemptId, OWED_HOURS],
        'owed_answer_find',
      );
      return rows.length > 0;
    },
    async take(attemptId) {
      return (
        (
          await pgQuery(
            db,
            `DELETE FROM x402_settle_answers_owed WHERE payment_attempt_id = $1 AND created_at >= now() - ` +
              `make_interval(hours => $2::int)`,
            [attemptId, OWED_HOURS],
            'owed_answer_take',
          )
        ).rowCount === 1
      );
    },
  };
}
