// swift-format-ignore-file
// (the JSON below is pasted as is from Resources/demo-notifications.json)
// The demo's script, embedded so that `notty demo` works wherever the binary is copied.
// A copy of Resources/demo-notifications.json (a test checks they are equal): edit that file,
// then paste it between the quotes below.

let embeddedDemoScript = #"""
{
  "apps": ["ci.example.com", "monitoring.example.com", "deploy.example.com", "chat.example.com", "calendar.example.com", "home.example.com"],
  "initial": [
    {"app": "ci.example.com", "group": "api/main", "priority": "High", "title": "Build #4812 failed on main", "body": "3 tests failed in PaymentsTests: testRefundIsIdempotent, testCurrencyRounding, testWebhookRetry.\nCommit 9f3c2e1 by dana: \"Round refunds half-even\".", "minutesAgo": 3, "actions": [{"label": "Re-run job", "path": "/ci/rerun"}]},
    {"app": "monitoring.example.com", "group": "prod-eu-1", "priority": "High", "title": "Disk usage 91% on db-primary", "body": "/var/lib/postgresql is at 91% (threshold 90%). Growth 2.1 GB/day; full in about 4 days.", "minutesAgo": 7, "expiresInMinutes": 45, "team": "ops", "actions": [{"label": "Silence 1h", "path": "/alertmanager/api/v2/silences", "clear": true}]},
    {"app": "deploy.example.com", "group": "web", "priority": "None", "title": "デプロイ完了 ✅ web v2.31.0", "body": "web v2.31.0 は本番環境 (ap-northeast-1) に正常にデプロイされました。所要時間 4分12秒。", "minutesAgo": 12, "state": "read"},
    {"app": "chat.example.com", "group": "#oncall", "priority": "High", "title": "Priya: can someone look at the 502s?", "body": "Seeing 502s from the edge since 10:40, about 2% of requests. Dashboards linked in the channel.", "minutesAgo": 15},
    {"app": "monitoring.example.com", "group": "prod-cn", "priority": "High", "title": "服务器告警 🔥 CPU 使用率 97%", "body": "主机 app-cn-3 的 CPU 使用率在过去 10 分钟内持续高于 95%。", "minutesAgo": 21, "expiresInMinutes": 30, "team": "ops"},
    {"app": "calendar.example.com", "group": null, "priority": "Low", "title": "Standup in 15 minutes", "body": "Daily standup · Room Ada / video link in the invite.", "minutesAgo": 25, "expiresInMinutes": 20},
    {"app": "ci.example.com", "group": "mobile/release", "priority": "None", "title": "🎉 Release 5.8.0 passed all checks", "body": "iOS and Android builds are green. 1,284 tests, 0 failures. Ready for store submission.", "minutesAgo": 34, "state": "activated"},
    {"app": "home.example.com", "group": "garage", "priority": "Low", "title": "Garage door left open", "body": "The garage door has been open for 30 minutes.", "minutesAgo": 41, "state": "dismissed"},
    {"app": "chat.example.com", "group": "direct", "priority": "None", "title": "Marco: lunch at 12:30? 🍜", "body": "Trying the new ramen place on Hauptstraße.", "minutesAgo": 48},
    {"app": "deploy.example.com", "group": "payments", "priority": "High", "title": "Rollback: payments v1.14.2 → v1.14.1", "body": "Automatic rollback after error rate rose to 4.8% (limit 1%). No data migration involved.", "minutesAgo": 55, "state": "read", "team": "ops", "by": "priya"},
    {"app": "monitoring.example.com", "group": "certificates", "priority": "None", "title": "TLS certificate for api.example.com expires in 7 days", "body": "Issuer: Let's Encrypt R11. Renewal job last ran 2 days ago and failed (DNS challenge timeout).", "minutesAgo": 70, "state": "snoozed"},
    {"app": "ci.example.com", "group": "docs", "priority": "Low", "title": "Docs preview ready for PR #1207", "body": "https://preview.example.com/pr-1207", "minutesAgo": 95, "state": "read"},
    {"app": "home.example.com", "group": "backup", "priority": "None", "title": "Nightly backup finished", "body": "412 GB, 1.2 M files, 38 min. Offsite copy verified.", "minutesAgo": 180, "state": "read"},
    {"app": "calendar.example.com", "group": null, "priority": "None", "title": "Reminder: renew passport 🛂", "body": "Your passport expires in 3 months.", "minutesAgo": 240},
    {"app": "chat.example.com", "group": "#release", "priority": "None", "title": "Léa: changelog for 5.8 is up for review", "body": "Please check the wording of the migration notes.", "minutesAgo": 320, "state": "read"},
    {"app": "monitoring.example.com", "group": "prod-us-2", "priority": "None", "title": "Resolved: latency p99 back under 300 ms", "body": "Incident INC-2291 auto-resolved after 18 minutes.", "minutesAgo": 400, "state": "dismissed", "team": "ops", "by": "priya"},
    {"app": "ci.example.com", "group": "api/main", "priority": "None", "title": "Nightly fuzzing found 0 new crashes", "body": "14 targets, 6 h each.", "minutesAgo": 600, "state": "read"},
    {"app": "deploy.example.com", "group": "search", "priority": "None", "title": "검색 서비스 배포 완료 🚀", "body": "search v3.2.0 배포가 완료되었습니다.", "minutesAgo": 720, "state": "read"}
  ],
  "later": [
    {"app": "ci.example.com", "group": "api/main", "priority": "High", "title": "Build #4813 failed on main", "body": "Lint: 2 errors in Sources/Payments/Refund.swift."},
    {"app": "chat.example.com", "group": "#oncall", "priority": "High", "title": "Sam: edge 502s are back 😬", "body": "Same pattern as this morning, eu-west only."},
    {"app": "monitoring.example.com", "group": "prod-eu-1", "priority": "None", "title": "Queue depth normal again", "body": "orders-queue depth 120 (threshold 5,000).", "team": "ops"},
    {"app": "deploy.example.com", "group": "web", "priority": "None", "title": "Deploy started: web v2.31.1", "body": "Canary at 5%, promoting in 10 minutes if healthy."},
    {"app": "home.example.com", "group": "doorbell", "priority": "High", "title": "Someone is at the front door 🚪", "body": "Motion detected at 14:02."},
    {"app": "calendar.example.com", "group": null, "priority": "Low", "title": "1:1 with Alex in 10 minutes", "body": "Agenda: roadmap, hiring."},
    {"app": "chat.example.com", "group": "direct", "priority": "None", "title": "王芳：文档我已经更新了 👍", "body": "请看一下第三节。"},
    {"app": "ci.example.com", "group": "mobile/release", "priority": "None", "title": "TestFlight build 5.8.1 (2204) is available", "body": "Internal testers have been notified."}
  ]
}
"""#
