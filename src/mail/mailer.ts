/**
 * Sending mail through the operator's SMTP server (nodemailer: the
 * best-kept SMTP client on npm; it upgrades to TLS with STARTTLS when the
 * server offers it, and speaks implicit TLS for smtps:// URLs).
 */
// @ts-types="@types/nodemailer"
import nodemailer from "nodemailer";

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /** Resolves once the mail server accepted the message; throws MailUnavailableError if not. */
  send(message: MailMessage): Promise<void>;
  close(): void;
}

export class MailUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "MailUnavailableError";
  }
}

export interface SmtpMailerOptions {
  /** smtp://user:pass@host:port or smtps://… */
  url: string;
  from: string;
  /** Give up on a mail server that does not answer within this long. */
  timeoutMs?: number;
}

export function createSmtpMailer(options: SmtpMailerOptions): Mailer {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const transport = nodemailer.createTransport(options.url, {
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  });
  return {
    async send(message) {
      try {
        await transport.sendMail({ from: options.from, ...message });
      } catch (error) {
        throw new MailUnavailableError(`Cannot send mail: ${(error as Error).message}`, {
          cause: error,
        });
      }
    },
    close() {
      transport.close();
    },
  };
}
