import { Controller, Get, type INestApplication } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { assertBackendRoutesEnveloped, BackendController } from './backend-controller.js';

@BackendController('api/widgets')
class EnvelopedController {
  @Get()
  list(): string[] {
    return [];
  }
}

@Controller('api/v1/public/widgets')
class ToolApiWidgetsController {
  @Get()
  list(): string[] {
    return [];
  }
}

@Controller()
class MixedController {
  @Get('oauth/widgets')
  outsideApi(): string[] {
    return [];
  }

  @Get('api/gadgets')
  forgotten(): string[] {
    return [];
  }
}

async function appWith(...controllers: (new () => unknown)[]): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [DiscoveryModule], controllers }).compile();
  return moduleRef.createNestApplication({ logger: false });
}

describe('assertBackendRoutesEnveloped', () => {
  it('accepts Area B controllers that wear the envelope, Area A controllers and routes outside /api', async () => {
    const app = await appWith(EnvelopedController, ToolApiWidgetsController);
    expect(() => assertBackendRoutesEnveloped(app)).not.toThrow();
    await app.close();
  });

  it('fails the boot naming an Area B route left without the envelope', async () => {
    const app = await appWith(EnvelopedController, MixedController);
    expect(() => assertBackendRoutesEnveloped(app)).toThrow(/MixedController\.forgotten \(\/api\/gadgets\)/);
    expect(() => assertBackendRoutesEnveloped(app)).not.toThrow(/outsideApi/);
    await app.close();
  });
});
